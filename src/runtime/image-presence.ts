// Which images the engine was seen to hold. The kubelet asks ImageStatus before every container it
// starts; that is a round trip on the path of every start (an apply of ten pods of one image asked
// ten times, a restart once more before its create). An image seen present stays so until podrun
// removes an image (its GC) or a create fails, which is when the engine may have lost it behind
// podrun's back (`crictl rmi`, `docker rmi`): then it is asked again, and, found gone, had again
// before the create is tried once more, as the kubelet's look before that create would have.
// An absent image, or a failed look, is never kept: the pull path always asks the engine itself.

export class ImagePresence {
  private readonly seen = new Map<string, Promise<boolean>>();

  constructor(private readonly look: (image: string) => Promise<boolean>) {}

  /** Whether the image is present: the runtime's answer, asked once however many ask at once. */
  present(image: string): Promise<boolean> {
    let known = this.seen.get(image);
    if (!known) {
      known = this.look(image);
      this.seen.set(image, known);
      // Only "present" is remembered: the entry goes unless the answer is yes.
      known.then(
        (yes) => {
          if (!yes && this.seen.get(image) === known) this.seen.delete(image);
        },
        () => {
          if (this.seen.get(image) === known) this.seen.delete(image);
        },
      );
    }
    return known;
  }

  /** Asks now without waiting (while the sandbox is being made), so the start finds the answer. */
  lookAhead(image: string): void {
    this.present(image).catch(() => undefined);
  }

  /** The runtime has the image now (it was just pulled or found). */
  saw(image: string): void {
    this.seen.set(image, Promise.resolve(true));
  }

  /** One image (or, with none named, every image) may be gone: ask the runtime again next time. */
  forget(image?: string): void {
    if (image === undefined) this.seen.clear();
    else this.seen.delete(image);
  }

  /**
   * The image as its pull policy says: nothing to do for one seen present (unless Always, which
   * pulls whatever the engine holds); otherwise `ensure`, the engine's own look and pull.
   */
  async ensure(image: string, policy: string | undefined, ensure: () => Promise<void>): Promise<void> {
    if (policy !== 'Always' && (await this.present(image).catch(() => false))) return;
    await ensure();
    this.saw(image);
  }

  /**
   * A create that failed, retried once if its image turns out to be gone (it was seen present
   * before): had again first (`ensure`). Otherwise the create's own error stands.
   */
  async create<T>(image: string, create: () => Promise<T>, ensure: () => Promise<void>, signal?: AbortSignal): Promise<T> {
    try {
      return await create();
    } catch (err) {
      this.forget(image);
      // The runtime's own answer, not a remembered one.
      if (signal?.aborted || (await this.look(image).catch(() => true))) throw err;
      await ensure();
      return create();
    }
  }
}
