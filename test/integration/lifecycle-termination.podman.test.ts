import { engineBed } from './engine-beds.js';
import { terminationSuite } from './lifecycle-termination.suite.js';

terminationSuite(engineBed('podman'));
