import type { PodRuntime } from './runtime.js';

// The engine as each part of podrun sees it, by role. Nothing outside src/runtime needs the
// concrete runtime: the agent is given a PodEngine (the real one, or the in-memory fake the unit
// tests drive), and each module asks only for the roles it uses.

/** Who this podrun instance and node are, as the runtime was set up. */
export type EngineIdentity = Pick<PodRuntime, 'instance' | 'hostIP' | 'nodeName' | 'oomScoreFloor' | 'options' | 'endpoint' | 'runtimeName'>;

/** Containers and sandboxes: made, stopped, removed, listed and watched (the pod worker's and the cache's role). */
export type EngineLifecycle = EngineIdentity &
  Pick<
    PodRuntime,
    | 'ping'
    | 'onCreated'
    | 'listPods'
    | 'listContainers'
    | 'inspectContainers'
    | 'watchEvents'
    | 'containerState'
    | 'finishedAt'
    | 'terminationMessage'
    | 'restartPolicyOf'
    | 'setRestartPolicy'
    | 'prepareVolumes'
    | 'createSandbox'
    | 'sandboxInfo'
    | 'stopSandbox'
    | 'removeSandbox'
    | 'startContainer'
    | 'stopContainer'
    | 'removeContainer'
    | 'removePodVolumes'
  >;

/** Images: pulled when a container needs one, listed and removed by the image GC. */
export type EngineImages = Pick<PodRuntime, 'ensureImage' | 'hasImage' | 'imageInventory' | 'removeImage'>;

/** Commands and logs: probes' and hooks' exec, `podrun exec` and `podrun logs`. */
export type EngineStreams = Pick<PodRuntime, 'exec' | 'execAttached' | 'endAbandonedExec' | 'writeLogs'>;

/** Readings: container usage, disk, and the engine's facts about the node. */
export type EngineReadings = Pick<PodRuntime, 'containerStats' | 'containerDisk' | 'engineFacts' | 'cgroupLayout' | 'containerCgroups'>;

/** Every role: what the agent runs on. */
export type PodEngine = EngineLifecycle & EngineImages & EngineStreams & EngineReadings;
