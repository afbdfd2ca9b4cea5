import { describe, expect, it } from 'vitest';
import { sourceText } from '../../src/base/cached-script.js';

describe("a code-cached script's text", () => {
  it('is the UTF-8 reading of its bytes, ASCII or not', () => {
    for (const text of ['var a = "plain"; // ASCII', '/* Jimmy Wärting */ let re = /µs/y;', 'ascii then a 4-byte 🙂', ''])
      expect(sourceText(Buffer.from(text, 'utf8'))).toBe(text);
  });
});
