import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dependentContainerIds,
  hasDependents,
  isEngineNotFound,
  isNotRunning,
  isStartUnderWay,
  storagelessContainerId,
} from '../../lib/provider/docker/engine-errors.ts';

/** An error as dockerode rejects with it: the HTTP status and the engine's JSON body. */
function engineError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) server error - ${message}`), {
    statusCode,
    json: { cause: 'x', message, response: statusCode },
  });
}

const GHOST = 'c95e25f1d6e3f7242dba940520eb1f79aeec0fecf6fb18eb5867171587f9daff';
const DEPENDENT = '49dea164892996960a1ad10bdde657523b52ba468a074bac0312eeeb67c0f315';

describe('docker engine errors (Podman 4.3 wording, as its service answers)', () => {
  it('counts a container vanished under a list or inspection as not found', () => {
    for (const message of [
      `getting container from store "${GHOST}": container not known`,
      `container ${GHOST} does not exist in database: no such container`,
      'container has already been removed',
    ]) {
      assert.equal(isEngineNotFound(engineError(500, message)), true, message);
    }
    assert.equal(isEngineNotFound(engineError(500, 'boom')), false);
  });

  it('names the container whose storage is gone, only from that wording', () => {
    assert.equal(
      storagelessContainerId(
        engineError(500, `getting container from store "${GHOST}": container not known`),
      ),
      GHOST,
    );
    assert.equal(
      storagelessContainerId(engineError(500, 'no container with name x: container not known')),
      undefined,
    );
    assert.equal(
      storagelessContainerId(
        engineError(404, `getting container from store "${GHOST}": container not known`),
      ),
      undefined,
    );
  });

  it('names the containers that block a removal', () => {
    const err = engineError(
      500,
      `container ${GHOST} has dependent containers which must be removed before it: ${DEPENDENT}: container already exists`,
    );
    assert.equal(hasDependents(err), true);
    assert.deepEqual(dependentContainerIds(err), [DEPENDENT]);
    assert.deepEqual(dependentContainerIds(engineError(500, 'container state improper')), []);
  });

  it('tells a start refused while another start runs from other refusals', () => {
    const racing = engineError(
      500,
      `container ${GHOST} must be in Created or Stopped state to be started: container state improper`,
    );
    assert.equal(isStartUnderWay(racing), true);
    // Killing a stopped container is improper too, but no start is under way.
    const killStopped = engineError(
      500,
      `can only kill running containers. ${GHOST} is in state exited: container state improper`,
    );
    assert.equal(isStartUnderWay(killStopped), false);
    assert.equal(isNotRunning(killStopped), true);
    assert.equal(isStartUnderWay(engineError(304, '')), false);
    assert.equal(isStartUnderWay(engineError(409, 'to be started: container state improper')), false);
  });
});
