import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MockCommandError, mockRun } from '../../lib/provider/mock/mock-command.ts';
import { podState } from '../../lib/provider/mock/mock-pod-spec.ts';

const sh = (script: string, env: Record<string, string> = {}) => mockRun(['sh', '-c', script], [], env);

describe('mock command', () => {
  it('reads how long a script runs and how it exits', () => {
    const cases: [string, ReturnType<typeof mockRun>][] = [
      ['exit 0', { seconds: 0, exitCode: 0, ignoresTerm: false }],
      ['exit 3', { seconds: 0, exitCode: 3, ignoresTerm: false }],
      ['sleep 2; exit 3', { seconds: 2, exitCode: 3, ignoresTerm: false }],
      ['sleep 1.5 && sleep 1m', { seconds: 61.5, exitCode: 0, ignoresTerm: false }],
      ['false', { seconds: 0, exitCode: 1, ignoresTerm: false }],
      ['false || exit 4; exit 5', { seconds: 0, exitCode: 4, ignoresTerm: false }],
      ['true && exit 6', { seconds: 0, exitCode: 6, ignoresTerm: false }],
      ['! true', { seconds: 0, exitCode: 1, ignoresTerm: false }],
      ['echo hello; sleep 3600', { seconds: 3600, exitCode: 0, ignoresTerm: false }],
      ["trap '' TERM; sleep 3600", { seconds: 3600, exitCode: 0, ignoresTerm: true }],
      ["trap 'exit 0' TERM; sleep 10", { seconds: 10, exitCode: 0, ignoresTerm: false }],
      ['sleep infinity', { exitCode: 0, ignoresTerm: false }],
      ['while true; do sleep 1; done', { exitCode: 0, ignoresTerm: false }],
      ['while false; do sleep 1; done; exit 2', { seconds: 0, exitCode: 2, ignoresTerm: false }],
      ['until true; do :; done', { seconds: 0, exitCode: 0, ignoresTerm: false }],
      ['for i in 1 2 3; do sleep 2; done', { seconds: 6, exitCode: 0, ignoresTerm: false }],
      ['for i in a b; do test "$i" = b && exit 7; done', { seconds: 0, exitCode: 7, ignoresTerm: false }],
      [
        'if false; then exit 1; elif true; then exit 2; else exit 3; fi',
        { seconds: 0, exitCode: 2, ignoresTerm: false },
      ],
      ['sleep 5 & sleep 1; wait; exit 9', { seconds: 5, exitCode: 9, ignoresTerm: false }],
      ['(exit 3); echo $?', { seconds: 0, exitCode: 0, ignoresTerm: false }],
      ['(exit 3) || exit 8', { seconds: 0, exitCode: 8, ignoresTerm: false }],
      ["sh -c 'sleep 2; exit 3'; exit $?", { seconds: 2, exitCode: 3, ignoresTerm: false }],
      ['exec sleep 4', { seconds: 4, exitCode: 0, ignoresTerm: false }],
      ['wget -q -O- http://localhost:8080/ || exit 1', { seconds: 0, exitCode: 0, ignoresTerm: false }],
      ['[ 3 -gt 2 ] && exit 0; exit 1', { seconds: 0, exitCode: 0, ignoresTerm: false }],
      ['# a comment\nsleep 1 # and another\nexit 2', { seconds: 1, exitCode: 2, ignoresTerm: false }],
    ];
    for (const [script, expected] of cases) assert.deepEqual(sh(script), expected, script);
  });

  it('evaluates tests against the container environment, with single quotes left alone', () => {
    const env = { COLOR: 'blue', EMPTY: '' };
    assert.equal(sh('test "$COLOR" = blue || exit 3', env)?.exitCode, 0);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script, not a template
    assert.equal(sh('test "${COLOR}" = red || exit 3', env)?.exitCode, 3);
    assert.equal(sh('[ -z "$EMPTY" ] && [ -n "$COLOR" ] || exit 3', env)?.exitCode, 0);
    assert.equal(sh('test "$MISSING" != "" || exit 3', env)?.exitCode, 3);
    assert.equal(sh("test '$COLOR' = blue || exit 3", env)?.exitCode, 3);
    assert.equal(
      sh('test $COLOR = blue -a 1; exit $?', env)?.exitCode,
      2,
      'an expression test does not know',
    );
  });

  it('takes plain commands as commands, and leaves anything else running until stopped', () => {
    assert.deepEqual(mockRun(['sleep'], ['30']), { seconds: 30, exitCode: 0, ignoresTerm: false });
    assert.deepEqual(mockRun(['/bin/sh', '-c', 'exit 1']), { seconds: 0, exitCode: 1, ignoresTerm: false });
    assert.equal(mockRun(['nginx', '-g', 'daemon off;']), undefined);
    assert.equal(mockRun([], []), undefined);
    assert.equal(mockRun(['sh']), undefined, 'an interactive shell waits on stdin');
  });

  it('refuses a script it cannot parse, naming it', () => {
    assert.throws(() => sh("echo 'unterminated"), MockCommandError);
    assert.throws(() => sh('while true; do sleep 1'), /cannot read the script.*expected "done"/);
  });

  it("runs a container's command and args with $(VAR) expanded from its env, as the kubelet does", () => {
    const state = podState({
      metadata: { namespace: 'n', name: 'job', uid: 'u' },
      spec: {
        nodeName: 'vk',
        containers: [
          {
            name: 'app',
            image: 'busybox',
            command: ['sh', '-c'],
            args: ['sleep $(DELAY); exit $(CODE)'],
            env: [
              { name: 'DELAY', value: '7' },
              { name: 'CODE', value: '3' },
            ],
          },
        ],
      },
    });
    assert.deepEqual(state.containers[0]?.run, { seconds: 7, exitCode: 3, ignoresTerm: false });
  });
});
