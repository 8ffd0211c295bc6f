/**
 * What env resolution reports: the Event reasons of virtual-kubelet's
 * node/env.go, the error that keeps a pod from the provider, and the warnings
 * for what it skipped.
 */

/** Event reasons, from virtual-kubelet's node/env.go. */
export const ENV_REASONS = {
  optionalConfigMapNotFound: 'OptionalConfigMapNotFound',
  optionalConfigMapKeyNotFound: 'OptionalConfigMapKeyNotFound',
  failedToReadOptionalConfigMap: 'FailedToReadOptionalConfigMap',
  optionalSecretNotFound: 'OptionalSecretNotFound',
  optionalSecretKeyNotFound: 'OptionalSecretKeyNotFound',
  failedToReadOptionalSecret: 'FailedToReadOptionalSecret',
  mandatoryConfigMapNotFound: 'MandatoryConfigMapNotFound',
  mandatoryConfigMapKeyNotFound: 'MandatoryConfigMapKeyNotFound',
  failedToReadMandatoryConfigMap: 'FailedToReadMandatoryConfigMap',
  mandatorySecretNotFound: 'MandatorySecretNotFound',
  mandatorySecretKeyNotFound: 'MandatorySecretKeyNotFound',
  failedToReadMandatorySecret: 'FailedToReadMandatorySecret',
  invalidEnvironmentVariableNames: 'InvalidEnvironmentVariableNames',
  /** The kubelet's container waiting reason when its environment cannot be built. */
  createContainerConfigError: 'CreateContainerConfigError',
} as const;

/** A mandatory reference could not be resolved; the pod must not go to the provider yet. */
export class EnvResolveError extends Error {
  override readonly name = 'EnvResolveError';
  constructor(
    /** The Event reason, e.g. MandatoryConfigMapNotFound. */
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Something skipped that the pod's owner should hear about (as a Warning event). */
export interface EnvWarning {
  reason: string;
  message: string;
}
