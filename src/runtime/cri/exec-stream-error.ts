import { EngineRequestError } from '../engine-errors.js';

// Apart from the session code (exec-stream.ts, exec-spdy.ts), which loads the WebSocket client:
// the engine tells this error from others on every start, and only `podrun exec -it` needs that client.

/** The refusal a session ends with (the runtime's words, for the user): a refused request, as the CLI tells them. */
export class ExecStreamError extends EngineRequestError {
  constructor(message: string) {
    super(message, 'Unknown', { engine: "the container runtime's streaming server" });
    this.name = 'ExecStreamError';
  }
}
