// The calls a podrun process made to a CRI runtime, read from its gRPC trace (PODRUN_GRPC_TRACE on
// stderr, src/runtime/cri/grpc-h2.ts), and how many round trips they took one after another: a call's round is one more than
// the deepest call answered before it began, so calls made together share a round, and a call
// made after an answer (whatever it waited for) counts as following it.

/** The environment that makes podrun write the trace this reads, on stderr. */
export const GRPC_TRACE_ENV = { PODRUN_GRPC_TRACE: '1' };

/** A trace line saying that call's frames were handed to the connection. */
export const SENT = /^grpc-trace: \[\d+\] sent$/;

export interface TracedCall {
  method: string;
  round: number;
}

export function tracedCalls(stderr: string): TracedCall[] {
  const calls = new Map<string, TracedCall & { answered: boolean }>();
  for (const line of stderr.split('\n')) {
    const made = /^grpc-trace: \[(\d+)\] call \/[^/]+\/(\w+)$/.exec(line);
    if (made) {
      let round = 1;
      for (const c of calls.values()) if (c.answered) round = Math.max(round, c.round + 1);
      calls.set(made[1]!, { method: made[2]!, round, answered: false });
      continue;
    }
    const done = /^grpc-trace: \[(\d+)\] status \d+$/.exec(line);
    const c = done ? calls.get(done[1]!) : undefined;
    if (c) c.answered = true;
  }
  return [...calls.values()].map(({ method, round }) => ({ method, round }));
}

/** `Version ‖ ListPodSandbox; RunPodSandbox`: the calls round by round, each round's sorted. */
export function rounds(calls: TracedCall[]): string {
  const by = new Map<number, string[]>();
  for (const c of calls) by.set(c.round, [...(by.get(c.round) ?? []), c.method]);
  return [...by.keys()]
    .sort((a, b) => a - b)
    .map((r) => by.get(r)!.sort().join(' ‖ '))
    .join('; ');
}
