import { describe, expect, it } from 'vitest';
import { nextPhase, settlePhase, type PhaseFacts } from '../../src/agent/pod-phase.js';

// The pod worker's phases (pod_workers.go): syncing → terminating → terminated → forgotten, moved
// by plain facts only.

const facts = (f: Partial<PhaseFacts>): PhaseFacts => ({ declared: true, onEngine: true, dirGone: false, ...f });

describe('nextPhase', () => {
  it('keeps a declared pod syncing, and sends one dropped from the desired set to terminating', () => {
    expect(nextPhase('syncing', facts({}))).toBe('syncing');
    expect(nextPhase('syncing', facts({ declared: false }))).toBe('terminating');
    // Dropped with nothing on the engine: it still goes through terminating (the engine is looked at there).
    expect(nextPhase('syncing', facts({ declared: false, onEngine: false, dirGone: true }))).toBe('terminating');
  });

  it('moves terminating to terminated once the engine lists nothing of the pod, not before', () => {
    expect(nextPhase('terminating', facts({ declared: false }))).toBe('terminating');
    expect(nextPhase('terminating', facts({ declared: false, onEngine: false }))).toBe('terminated');
  });

  it('moves terminated to forgotten once its directory is gone, not before', () => {
    expect(nextPhase('terminated', facts({ declared: false, onEngine: false }))).toBe('terminated');
    expect(nextPhase('terminated', facts({ declared: false, onEngine: false, dirGone: true }))).toBe('forgotten');
    expect(nextPhase('forgotten', facts({ declared: false, onEngine: false, dirGone: true }))).toBe('forgotten');
  });

  it('makes a pod declared again while terminating wait for terminated, then sync anew', () => {
    expect(nextPhase('terminating', facts({}))).toBe('terminating');
    expect(settlePhase('terminating', facts({}))).toEqual(['terminating']);
    expect(settlePhase('terminating', facts({ onEngine: false }))).toEqual(['terminating', 'terminated', 'syncing']);
    expect(nextPhase('forgotten', facts({}))).toBe('syncing');
  });

  it('settles a dropped pod the engine no longer has in one turn: terminating, terminated, forgotten', () => {
    expect(settlePhase('syncing', facts({ declared: false, onEngine: false, dirGone: true }))).toEqual(['syncing', 'terminating', 'terminated', 'forgotten']);
    expect(settlePhase('syncing', facts({ declared: false }))).toEqual(['syncing', 'terminating']);
  });
});
