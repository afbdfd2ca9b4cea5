import type { Container } from '../manifest/types.js';
import { ImageError, type PullListener } from './runtime-types.js';
import { Slots } from './slots.js';

// The kubelet's image rules, whichever engine holds the images (pkg/kubelet/images/image_manager.go):
// the pull policy decides whether to pull, one pull per image at a time, serializeImagePulls
// (or maxParallelImagePulls) bounding them all.

export type { PullListener };

/** Pulls as `policy` says, given whether the engine has the image; `pull` answers the Pulled event's message. */
export async function ensureByPolicy(
  image: string,
  policy: Container['imagePullPolicy'],
  present: boolean,
  pull: () => Promise<string>,
  onPull?: PullListener,
): Promise<void> {
  if (policy === 'Never') {
    if (!present) throw new ImageError(`image ${image} is not present and its imagePullPolicy is Never`, 'ErrImageNeverPull');
    return;
  }
  if (present && policy !== 'Always') return;
  onPull?.('pulling');
  // Pulled whether or not anyone listens (an optional call would skip evaluating its argument).
  const message = await pull();
  onPull?.('pulled', message);
}

/** One pull per image at a time, however many containers (or commands) want it; `slots` pulls at once (0: any number). */
export class PullQueue<T> {
  private readonly pulls = new Map<string, Promise<T>>();
  private readonly slots: Slots;

  constructor(slots: number) {
    this.slots = new Slots(slots > 0 ? slots : Number.POSITIVE_INFINITY);
  }

  run(image: string, pull: () => Promise<T>): Promise<T> {
    let pending = this.pulls.get(image);
    if (!pending) {
      pending = this.slots.run(pull).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pending);
    }
    return pending;
  }
}
