import { engineBed } from './engine-beds.js';
import { criLogFilesSuite } from './cri-log-files.suite.js';

criLogFilesSuite(engineBed('cri'));
