import { engineBed } from './engine-beds.js';
import { upgradeSuite } from './upgrade.suite.js';

// The release of 2026-11-30: the last commit before the engine interface began to move (issue 30).
// With its time: git reads a bare date as that day at the time of day the test runs, which picked
// one of 2026-12-01's 141 commits, a later one each hour.
upgradeSuite(engineBed('docker'), { before: '2026-12-01T00:00:00Z' });
