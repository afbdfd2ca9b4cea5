import { engineBed } from './engine-beds.js';
import { upgradeSuite } from './upgrade.suite.js';

// podrun has run pods on CRI since 2026-12-02 (the cri-engine merge), so the Docker case's release
// of 2026-11-30 cannot make them. The previous release here is main as issue 43's engine work
// began (its last commit, 2026-12-07 15:05:55 UTC): the build the CRI-at-the-core refactor
// (CRI messages as the intermediate form, generated tables) is measured against. A date, not a
// commit id, so the rule holds as main moves on: every commit of that work is newer.
upgradeSuite(engineBed('cri'), { before: '2026-12-07T15:06:00Z' });
