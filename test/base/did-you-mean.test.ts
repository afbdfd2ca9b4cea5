import { describe, expect, it } from 'vitest';
import { didYouMean, distance } from '../../src/base/did-you-mean.js';

describe('did you mean', () => {
  it('names the near miss of a field or a verb', () => {
    expect(didYouMean('comand', ['command', 'args', 'image', 'name'])).toBe('command');
    expect(didYouMean('memroy', ['cpu', 'memory', 'ephemeral-storage'])).toBe('memory');
    expect(didYouMean('aply', ['apply', 'get', 'delete'])).toBe('apply');
    expect(didYouMean('imagePullpolicy', ['image', 'imagePullPolicy'])).toBe('imagePullPolicy');
    expect(didYouMean('livenesProbe', ['livenessProbe', 'readinessProbe'])).toBe('livenessProbe');
  });

  it('says nothing when nothing is close, or the word is right', () => {
    expect(didYouMean('zzzzzz', ['command', 'args'])).toBeUndefined();
    expect(didYouMean('cpu', ['memory'])).toBeUndefined();
    expect(didYouMean('command', ['command'])).toBeUndefined();
    expect(didYouMean('x', [])).toBeUndefined();
    // Short words are too short to guess from: "gpu" is not "cpu", "ag" not "args".
    expect(didYouMean('gpu', ['cpu', 'memory'])).toBeUndefined();
    expect(didYouMean('ag', ['image', 'args'])).toBeUndefined();
    expect(didYouMean('CPU', ['cpu', 'memory'])).toBe('cpu');
  });

  it('counts a swap of neighbours as one edit', () => {
    expect(distance('memroy', 'memory')).toBe(1);
    expect(distance('comand', 'command')).toBe(1);
    expect(distance('', 'abc')).toBe(3);
    expect(distance('kitten', 'sitting')).toBe(3);
  });
});
