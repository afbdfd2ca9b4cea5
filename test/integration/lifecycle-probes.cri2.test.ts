import { engineBed } from './engine-beds.js';
import { probesSuite } from './lifecycle-probes.suite.js';

probesSuite(engineBed('cri2'));
