import { engineBed } from './engine-beds.js';
import { restartsSuite } from './lifecycle-restarts.suite.js';

restartsSuite(engineBed('podman'));
