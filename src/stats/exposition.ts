// The Prometheus text format as the container endpoints write it: label sets made once per
// container, families in the order first seen. Pure.

import { escapeLabel } from '../metrics/text-format.js';

export type Labels = Record<string, string>;

/** A label set as the text format writes it, made once per container and shared by its series. */
export class LabelText {
  private constructor(readonly text: string) {}

  static of(labels: Labels): LabelText {
    return new LabelText(
      Object.entries(labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(','),
    );
  }

  with(name: string, value: string): LabelText {
    return new LabelText(`${this.text}${this.text ? ',' : ''}${name}="${escapeLabel(value)}"`);
  }
}

/** Families in the order first seen, each sample with its labels and the reading's time (ms). */
export class Exposition {
  private readonly families = new Map<string, { type: 'counter' | 'gauge' | 'untyped'; help: string; lines: string[] }>();

  add(name: string, type: 'counter' | 'gauge' | 'untyped', help: string, labels: Labels | LabelText, value: number | undefined, timeMs?: number): void {
    let f = this.families.get(name);
    if (!f) {
      f = { type, help, lines: [] };
      this.families.set(name, f);
    }
    if (value === undefined || !Number.isFinite(value)) return;
    const l = labels instanceof LabelText ? labels.text : LabelText.of(labels).text;
    f.lines.push(`${name}{${l}} ${value}${timeMs !== undefined && Number.isFinite(timeMs) ? ` ${timeMs}` : ''}`);
  }

  text(): string {
    return [...this.families].map(([name, f]) => [`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`, ...f.lines].join('\n')).join('\n') + '\n';
  }
}
