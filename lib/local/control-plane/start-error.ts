/** A component failed to start or become ready; the message carries the tail of its log. */
export class ControlPlaneStartError extends Error {
  override readonly name = 'ControlPlaneStartError';
}
