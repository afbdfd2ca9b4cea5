import { engineBed } from './engine-beds.js';
import { execKillSuite } from './exec-kill.suite.js';

execKillSuite(engineBed('cri2'));
