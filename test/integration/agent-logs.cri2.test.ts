import { agentLogsSuite } from './agent-logs.suite.js';
import { engineBed } from './engine-beds.js';

agentLogsSuite(engineBed('cri2'));
