import { CONTAINERD_2 } from './containerd-config.js';
import { zeroTimesSuite } from './zero-times.suite.js';

zeroTimesSuite('cri2', CONTAINERD_2);
