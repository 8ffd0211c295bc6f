/**
 * How a test steers a pod in the mock provider: annotations on the pod, read
 * when the provider creates (or updates) it. Without them a pod starts at once
 * and runs until it is deleted, or as its containers' commands say
 * (mock-command.ts).
 */

const PREFIX = 'mock.serverless-virtual-kubelet.io/';

/** `"<message>"`: createPod fails with this message (a provider failure) and stores nothing. */
export const MOCK_FAIL_CREATE_ANNOTATION = `${PREFIX}fail-create`;
/** `"N"` (seconds, decimals allowed): the pod is Pending, its containers waiting in ContainerCreating, for N seconds after create. */
export const MOCK_START_DELAY_ANNOTATION = `${PREFIX}start-delay-seconds`;
/**
 * `"N"` (seconds, decimals allowed): N seconds after its containers started,
 * every container terminates with the exit code of {@link MOCK_EXIT_CODE_ANNOTATION};
 * the pod is then Succeeded (exit code 0) or Failed. It overrides what the
 * containers' commands would do, and such a container is never restarted,
 * whatever the pod's restartPolicy.
 */
export const MOCK_FINISH_AFTER_ANNOTATION = `${PREFIX}finish-after-seconds`;
/** `"C"` (0-255, default 0): the exit code of a finishing pod; needs {@link MOCK_FINISH_AFTER_ANNOTATION}. */
export const MOCK_EXIT_CODE_ANNOTATION = `${PREFIX}exit-code`;

/** A pod's life in the mock, relative to the moment the provider created it. */
export interface MockPodPlan {
  /** Seconds in Pending (ContainerCreating) before the containers run. */
  startDelaySeconds: number;
  /** Seconds the containers run before they terminate; they never do when absent. */
  finishAfterSeconds?: number;
  /** Exit code of every container when they terminate. */
  exitCode: number;
}

/** What the mock's annotations ask of a create. */
export type MockCreateIntent = { fail: string } | { plan: MockPodPlan };

/**
 * Reads the mock's annotations of a pod.
 * @throws Error naming the annotation when a value is not a valid number.
 */
export function mockCreateIntent(annotations: Readonly<Record<string, string>> = {}): MockCreateIntent {
  const fail = annotations[MOCK_FAIL_CREATE_ANNOTATION];
  if (fail !== undefined) {
    return { fail: fail.trim() || `create refused by annotation ${MOCK_FAIL_CREATE_ANNOTATION}` };
  }
  return { plan: mockPodPlan(annotations) };
}

/**
 * The plan the annotations describe (fail-create is not part of it: it only
 * matters to a create).
 * @throws Error naming the annotation when a value is not a valid number.
 */
export function mockPodPlan(annotations: Readonly<Record<string, string>> = {}): MockPodPlan {
  const startDelaySeconds = seconds(annotations, MOCK_START_DELAY_ANNOTATION) ?? 0;
  const finishAfterSeconds = seconds(annotations, MOCK_FINISH_AFTER_ANNOTATION);
  const exitCodeText = annotations[MOCK_EXIT_CODE_ANNOTATION];
  let exitCode = 0;
  if (exitCodeText !== undefined) {
    if (finishAfterSeconds === undefined) {
      throw new Error(
        `annotation ${MOCK_EXIT_CODE_ANNOTATION} needs ${MOCK_FINISH_AFTER_ANNOTATION}: a container that never finishes has no exit code`,
      );
    }
    if (!/^\d{1,3}$/.test(exitCodeText.trim()) || Number(exitCodeText) > 255) {
      throw new Error(
        `annotation ${MOCK_EXIT_CODE_ANNOTATION}: ${JSON.stringify(exitCodeText)} is not an exit code (an integer from 0 to 255)`,
      );
    }
    exitCode = Number(exitCodeText);
  }
  return {
    startDelaySeconds,
    ...(finishAfterSeconds !== undefined ? { finishAfterSeconds } : {}),
    exitCode,
  };
}

function seconds(annotations: Readonly<Record<string, string>>, key: string): number | undefined {
  const text = annotations[key];
  if (text === undefined) return undefined;
  // Number() alone would accept '', '0x10', '1e3' and 'Infinity'.
  if (!/^\d+(\.\d+)?$/.test(text.trim())) {
    throw new Error(
      `annotation ${key}: ${JSON.stringify(text)} is not a number of seconds (a non-negative decimal such as "5" or "0.5")`,
    );
  }
  return Number(text);
}
