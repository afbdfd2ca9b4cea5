import { zeroTimesSuite } from './zero-times.suite.js';

zeroTimesSuite('cri');
