import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type MockNodeOverride, MockNodeProvider } from '../../lib/provider/mock/mock-node.ts';
import { FakeClock } from '../support/fake-clock.ts';

/** A store whose reads answer from `state`, or fail while `state.down`. */
function store(state: { down: boolean; overrides: Map<string, MockNodeOverride> }) {
  return {
    loadOverrides: async () => {
      if (state.down) throw new Error('connect ECONNREFUSED (state table)');
      return state.overrides;
    },
  };
}

function provider(state: { down: boolean; overrides: Map<string, MockNodeOverride> }, clock: FakeClock) {
  return new MockNodeProvider({
    store: store(state),
    capacity: { cpu: '4' },
    operatingSystem: 'linux',
    kubeletVersion: 'v1.20.2',
    clock,
    overridesMaxAgeMs: 1_000,
  });
}

describe('mock node provider', () => {
  it('stays healthy when its overrides cannot be read at all', async () => {
    const clock = new FakeClock({ wall: 1_700_000_000_000 });
    const p = provider({ down: true, overrides: new Map() }, clock);
    await p.ping('vk');
    const status = await p.nodeStatus('vk');
    assert.equal(status.conditions.find((c) => c.type === 'Ready')?.status, 'True');
  });

  it('keeps the last overrides read while the store is down, and reads again once it answers', async () => {
    const clock = new FakeClock({ wall: 1_700_000_000_000 });
    const state = { down: false, overrides: new Map([['vk', { pingError: 'backend down' }]]) };
    const p = provider(state, clock);
    await assert.rejects(p.ping('vk'), /backend down/);
    state.down = true;
    await clock.advance(5_000);
    await assert.rejects(p.ping('vk'), /backend down/);
    await p.ping('other');
    state.down = false;
    state.overrides = new Map();
    await clock.advance(5_000);
    await p.ping('vk');
  });
});
