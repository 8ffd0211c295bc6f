import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EnvVar } from '@kubernetes/client-node';
import { containerArgv, expandCommandAndArgs } from '../../lib/provider/container-command.ts';

/** The env of the kubelet's TestMapping (third_party/forked/golang/expansion/expand_test.go). */
const KUBELET_ENV: V1EnvVar[] = [
  { name: 'VAR_A', value: 'A' },
  { name: 'VAR_B', value: 'B' },
  { name: 'VAR_C', value: 'C' },
  { name: 'VAR_REF', value: '$(VAR_A)' },
  { name: 'VAR_EMPTY', value: '' },
];

/** doExpansionTest's cases, input → expected, in its order. */
const KUBELET_CASES: ReadonlyArray<[string, string, string]> = [
  ['whole string', '$(VAR_A)', 'A'],
  ['repeat', '$(VAR_A)-$(VAR_A)', 'A-A'],
  ['beginning', '$(VAR_A)-1', 'A-1'],
  ['middle', '___$(VAR_B)___', '___B___'],
  ['end', '___$(VAR_C)', '___C'],
  ['compound', '$(VAR_A)_$(VAR_B)_$(VAR_C)', 'A_B_C'],
  ['escape & expand', '$$(VAR_B)_$(VAR_A)', '$(VAR_B)_A'],
  ['compound escape', '$$(VAR_A)_$$(VAR_B)', '$(VAR_A)_$(VAR_B)'],
  ['mixed in escapes', 'f000-$$VAR_A', 'f000-$VAR_A'],
  ['backslash escape ignored', 'foo\\$(VAR_C)bar', 'foo\\Cbar'],
  ['backslash escape ignored (2)', 'foo\\\\$(VAR_C)bar', 'foo\\\\Cbar'],
  ['lots of backslashes', 'foo\\\\\\\\$(VAR_A)bar', 'foo\\\\\\\\Abar'],
  ['nested var references', '$(VAR_A$(VAR_B))', '$(VAR_A$(VAR_B))'],
  ['nested var references second type', '$(VAR_A$(VAR_B)', '$(VAR_A$(VAR_B)'],
  ['value is a reference', '$(VAR_REF)', '$(VAR_A)'],
  ['value is a reference x 2', '%%$(VAR_REF)--$(VAR_REF)%%', '%%$(VAR_A)--$(VAR_A)%%'],
  ['empty var', 'foo$(VAR_EMPTY)bar', 'foobar'],
  ['unterminated expression', 'foo$(VAR_Awhoops!', 'foo$(VAR_Awhoops!'],
  ['expression without operator', 'f00__(VAR_A)__', 'f00__(VAR_A)__'],
  ['shell special vars pass through', '$?_boo_$!', '$?_boo_$!'],
  ['bare operators are ignored', '$VAR_A', '$VAR_A'],
  ['undefined vars are passed through', '$(VAR_DNE)', '$(VAR_DNE)'],
  ['multiple (even) operators, var undefined', '$$$$$$(BIG_MONEY)', '$$$(BIG_MONEY)'],
  ['multiple (even) operators, var defined', '$$$$$$(VAR_A)', '$$$(VAR_A)'],
  ['multiple (odd) operators, var undefined', '$$$$$$$(GOOD_ODDS)', '$$$$(GOOD_ODDS)'],
  ['multiple (odd) operators, var defined', '$$$$$$$(VAR_A)', '$$$A'],
  ['missing open expression', '$VAR_A)', '$VAR_A)'],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, which expansion leaves alone.
  ['shell syntax ignored', '${VAR_A}', '${VAR_A}'],
  ['trailing incomplete expression not consumed', '$(VAR_B)_______$(A', 'B_______$(A'],
  ['trailing incomplete expression, no content, is not consumed', '$(VAR_C)_______$(', 'C_______$('],
  ['operator at end of input string is preserved', '$(VAR_A)foobarzab$', 'Afoobarzab$'],
  ['shell escaped incomplete expr', 'foo-\\$(VAR_A', 'foo-\\$(VAR_A'],
  ['lots of $( in middle', '--$($($($($--', '--$($($($($--'],
  ['lots of $( in beginning', '$($($($($--foo$(', '$($($($($--foo$('],
  ['lots of $( at end', 'foo0--$($($($(', 'foo0--$($($($('],
  ['escaped operators in variable names are not escaped', '$(foo$$var)', '$(foo$$var)'],
  ['newline not expanded', '\n', '\n'],
];

describe('expandCommandAndArgs ($(VAR) in command and args, as the kubelet)', () => {
  for (const [name, input, expected] of KUBELET_CASES) {
    it(`kubelet case: ${name}`, () => {
      const { command, args } = containerArgv({ command: [input], args: [input], env: KUBELET_ENV });
      assert.deepEqual(command, [expected]);
      assert.deepEqual(args, [expected]);
    });
  }

  it('expands the e2e Variable Expansion specs (command and args under sh -c)', () => {
    const env = [{ name: 'TEST_VAR', value: 'test-value' }];
    // test/e2e/common/expansion.go: the container must print test-value, not wrong.
    assert.deepEqual(
      containerArgv({ command: ['sh', '-c', 'TEST_VAR=wrong echo "$(TEST_VAR)"'], env }).command,
      ['sh', '-c', 'TEST_VAR=wrong echo "test-value"'],
    );
    assert.deepEqual(
      containerArgv({ command: ['sh', '-c'], args: ['TEST_VAR=wrong echo "$(TEST_VAR)"'], env }),
      {
        command: ['sh', '-c'],
        args: ['TEST_VAR=wrong echo "test-value"'],
      },
    );
  });

  it('leaves an empty or absent command and args absent (the image decides)', () => {
    assert.deepEqual(containerArgv({ env: KUBELET_ENV }), {});
    assert.deepEqual(containerArgv({ command: [], args: [] }), {});
    assert.deepEqual(containerArgv({ args: ['$(VAR_A)'], env: KUBELET_ENV }), { args: ['A'] });
  });

  it('takes the last of two variables of one name (EnvVarsToMap), and no env at all', () => {
    const env = [
      { name: 'X', value: 'first' },
      { name: 'X', value: 'second' },
    ];
    assert.deepEqual(containerArgv({ args: ['$(X)'], env }).args, ['second']);
    assert.deepEqual(containerArgv({ args: ['$(X)', '$$(X)'] }).args, ['$(X)', '$(X)']);
  });

  it('says which variables each word used, with where they came from', () => {
    const secret = {
      name: 'PASSWORD',
      value: 'hunter2',
      valueFrom: { secretKeyRef: { name: 's', key: 'p' } },
    };
    const field = {
      name: 'POD_NAME',
      value: 'web-1',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    };
    const expanded = expandCommandAndArgs({
      command: ['run', '--name=$(POD_NAME)'],
      args: ['--password=$(PASSWORD)', '$$(PASSWORD)', '$(MISSING)'],
      env: [secret, field],
    });
    assert.deepEqual(
      expanded.command?.map((w) => [w.value, w.uses.map((u) => u.name)]),
      [
        ['run', []],
        ['--name=web-1', ['POD_NAME']],
      ],
    );
    assert.deepEqual(
      expanded.args?.map((w) => [w.value, w.uses.map((u) => u.name)]),
      [
        ['--password=hunter2', ['PASSWORD']],
        ['$(PASSWORD)', []],
        ['$(MISSING)', []],
      ],
    );
  });
});
