/**
 * A Kubernetes MicroTime (a Lease's renewTime): a Date that writes itself
 * with microseconds, `2026-01-02T03:04:05.678000Z`, as the API server's
 * MicroTime fields are formatted (client-node's V1MicroTime, whose type it
 * matches, without importing client-node at run time).
 */
export class MicroTime extends Date {
  override toISOString(): string {
    return `${super.toISOString().slice(0, -1)}000Z`;
  }
}
