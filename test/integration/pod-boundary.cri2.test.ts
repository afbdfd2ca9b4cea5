import { engineBed } from './engine-beds.js';
import { podBoundarySuite } from './pod-boundary.suite.js';

podBoundarySuite(engineBed('cri2'));
