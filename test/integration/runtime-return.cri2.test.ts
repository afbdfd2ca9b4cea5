import { engineBed } from './engine-beds.js';
import { runtimeReturnSuite } from './runtime-return.suite.js';

runtimeReturnSuite(engineBed('cri2'));
