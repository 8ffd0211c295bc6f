import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type EngineEvent, engineChange } from '../../lib/provider/docker/engine-changes.ts';
import { LABELS } from '../../lib/provider/docker/names.ts';

/** Which engine events wake pod-status, in the shapes Podman 4.3 sends them. */

function event(action: string, attributes: Record<string, string>, type = 'container'): EngineEvent {
  return { status: action, Type: type, Action: action, Actor: { ID: 'c1', Attributes: attributes } };
}

const ours = { [LABELS.node]: 'n1', [LABELS.uid]: 'u1', name: 'svk_u1_app_main_0', containerExitCode: '3' };

describe('engine changes', () => {
  it('a start, an exit, a removal or a health status of our node is a change of its pod', () => {
    for (const action of ['start', 'die', 'oom', 'destroy', 'remove', 'health_status: unhealthy']) {
      assert.deepEqual(engineChange(event(action, ours), 'n1'), { reason: action, uid: 'u1' }, action);
    }
  });

  it('steps towards one of those, and Podman-only steps, are not', () => {
    for (const action of ['create', 'init', 'attach', 'kill', 'stop', 'cleanup', 'exec_create']) {
      assert.equal(engineChange(event(action, ours), 'n1'), undefined, action);
    }
  });

  it("another node's container, a container not ours, and other object types are not", () => {
    assert.equal(engineChange(event('die', ours), 'n2'), undefined);
    assert.equal(engineChange(event('die', { name: 'other' }), 'n1'), undefined);
    assert.equal(engineChange(event('remove', ours, 'volume'), 'n1'), undefined);
    assert.equal(engineChange({}, 'n1'), undefined);
  });

  it('reads the action from `status` when an engine sends no `Action`', () => {
    assert.deepEqual(engineChange({ status: 'die', Actor: { Attributes: ours } }, 'n1'), {
      reason: 'die',
      uid: 'u1',
    });
  });
});
