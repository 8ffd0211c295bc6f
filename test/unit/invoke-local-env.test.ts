/** `serverless invoke local` without a deployed stack (scripts/invoke-local-env.mjs, an osls plugin). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import InvokeLocalEnvPlugin, { envOptions, replaceStackReferences } from '../../scripts/invoke-local-env.mjs';

function service() {
  return {
    custom: { esbuild: { outputFileExtension: '.mjs' } as Record<string, unknown> },
    provider: {
      environment: {
        SVK_TABLE_NAME: { Ref: 'StateTable' },
        SVK_EVENT_BUS_NAME: { Ref: 'PodEventBus' },
        SVK_PROVIDER: 'mock',
      } as Record<string, unknown>,
    },
    functions: {
      tick: { environment: { SVK_TICK_QUEUE_URL: { Ref: 'TickQueue' } } as Record<string, unknown> },
      heartbeat: {},
    },
  };
}

describe('invoke local environment', () => {
  it('reads --env NAME=value options, one or several, values holding =', () => {
    assert.deepEqual([...envOptions('A=1')], [['A', '1']]);
    assert.deepEqual(
      [...envOptions(['A=1', 'B=x=y', 'bad', '=v'])],
      [
        ['A', '1'],
        ['B', 'x=y'],
      ],
    );
    assert.equal(envOptions(undefined).size, 0);
  });

  it('puts the values given in place of the stack references they name, and leaves the others to osls', () => {
    const { provider, functions } = service();
    const replaced = replaceStackReferences(
      [provider.environment, functions.tick.environment],
      new Map([
        ['SVK_TABLE_NAME', 'svk-local'],
        ['SVK_PROVIDER', 'docker'],
      ]),
    );
    assert.deepEqual(replaced, ['SVK_TABLE_NAME']);
    assert.equal(provider.environment.SVK_TABLE_NAME, 'svk-local');
    assert.deepEqual(
      provider.environment.SVK_EVENT_BUS_NAME,
      { Ref: 'PodEventBus' },
      'not given: from the stack',
    );
    assert.equal(
      provider.environment.SVK_PROVIDER,
      'mock',
      'not a reference: --env applies it later, as osls does',
    );
    assert.deepEqual(functions.tick.environment.SVK_TICK_QUEUE_URL, { Ref: 'TickQueue' });
  });

  it('acts for `invoke local` only: bundles as .js there, changes nothing for a package or a deploy', () => {
    const local = service();
    new InvokeLocalEnvPlugin(
      { processedInput: { commands: ['invoke', 'local'] }, service: local },
      { env: ['SVK_TICK_QUEUE_URL=http://queue'] },
    );
    assert.equal(local.functions.tick.environment.SVK_TICK_QUEUE_URL, 'http://queue');
    assert.equal(local.custom.esbuild.outputFileExtension, '.js');
    for (const commands of [['package'], ['deploy'], ['invoke']]) {
      const other = service();
      new InvokeLocalEnvPlugin({ processedInput: { commands }, service: other }, { env: 'SVK_TABLE_NAME=x' });
      assert.deepEqual(other, service(), commands.join(' '));
    }
  });
});
