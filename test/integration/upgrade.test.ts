import { engineBed } from './engine-beds.js';
import { upgradeSuite } from './upgrade.suite.js';

// The release of 2026-11-30: the last commit before the engine interface began to move (issue 30).
upgradeSuite(engineBed('docker'), { before: '2026-12-01' });
