import { kill9Suite } from './agent-kill9.suite.js';
import { engineBed } from './engine-beds.js';

kill9Suite(engineBed('podman'));
