import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { limitBytes, logTimestamp } from '../../lib/provider/log-lines.ts';
import { MOCK_LOG_RETENTION_MS, mockContainerLog } from '../../lib/provider/mock/mock-logs.ts';
import type { MockPodState } from '../../lib/provider/mock/mock-pod-status.ts';
import { BUSY_LOOP_NOTE, mockLines, mockProgram } from '../../lib/provider/mock/mock-script.ts';
import { mockPodUsage } from '../../lib/provider/mock/mock-stats.ts';
import type { ContainerLogOptions } from '../../lib/provider/provider.ts';
import { FakeClock } from '../support/fake-clock.ts';

const T0 = Date.parse('2026-03-01T10:00:00.400Z');

/** A clock whose sleep moves time on at once (the code under test waits on nothing else). */
function steppingClock(start: number): FakeClock {
  return new FakeClock({ wall: start, autoAdvance: true });
}

function podWith(command: string[], args: string[] = []): V1Pod {
  return {
    metadata: { namespace: 'ns', name: 'p', uid: 'u-1' },
    spec: { nodeName: 'vk', containers: [{ name: 'main', image: 'busybox', command, args }] },
  };
}

function state(plan: Partial<MockPodState['plan']> = {}): MockPodState {
  return {
    namespace: 'ns',
    name: 'p',
    uid: 'u-1',
    node: 'vk',
    restartPolicy: 'Always',
    containers: [{ name: 'main', image: 'busybox' }],
    plan: { startDelaySeconds: 0, exitCode: 0, ...plan },
    createdAt: T0,
  };
}

async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  let out = '';
  const decoder = new TextDecoder();
  for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  return out + decoder.decode();
}

function read(pod: V1Pod, at: number, options: ContainerLogOptions = {}, s = state()) {
  return text(mockContainerLog({ state: s, pod, container: 'main', options, clock: steppingClock(at) }));
}

describe('mock programs', () => {
  it('an echo command prints its words', () => {
    assert.deepEqual(mockProgram(['echo', 'hello', 'world']), [{ kind: 'echo', text: 'hello world' }]);
    assert.deepEqual(mockProgram(['/bin/echo'], ['-n', 'x']), [{ kind: 'echo', text: 'x' }]);
  });

  it('a shell script: echo, sleep, quotes, && and newlines; other statements print nothing', () => {
    const program = mockProgram(['sh', '-c'], ['echo "a  b" && date\necho \'c;d\'; sleep 2; echo e']);
    assert.deepEqual(program, [
      { kind: 'echo', text: 'a  b' },
      { kind: 'echo', text: 'c;d' },
      { kind: 'sleep', ms: 2000 },
      { kind: 'echo', text: 'e' },
    ]);
  });

  it('for loops expand their variable; while loops repeat their body', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script, not a template
    const script = 'for i in 1 2; do echo n=$i ${i}; done; exit 3; echo never';
    assert.deepEqual(mockProgram(['sh', '-c', script]), [
      { kind: 'echo', text: 'n=1 1' },
      { kind: 'echo', text: 'n=2 2' },
      { kind: 'exit' },
      { kind: 'echo', text: 'never' },
    ]);
    assert.deepEqual(mockProgram(['bash', '-c', 'while true; do echo tick; sleep 5; done']), [
      {
        kind: 'loop',
        body: [
          { kind: 'echo', text: 'tick' },
          { kind: 'sleep', ms: 5000 },
        ],
      },
    ]);
  });

  it('an unknown command prints nothing', () => {
    assert.deepEqual(mockProgram(['nginx', '-g', 'daemon off;']), []);
    assert.deepEqual(mockProgram(), []);
  });

  it('lines carry the time they are printed; exit stops the program', () => {
    const lines = [...mockLines(mockProgram(['sh', '-c', 'echo a; sleep 1.5; echo b; exit; echo c']), T0)];
    assert.deepEqual(lines, [
      { at: T0, text: 'a' },
      { at: T0 + 1500, text: 'b' },
    ]);
  });

  it('a sleeping loop jumps straight to the lines asked for', () => {
    const program = mockProgram(['sh', '-c', 'while :; do echo tick; sleep 10; done']);
    const from = T0 + 365 * 24 * 3600 * 1000 + 5_000;
    const generator = mockLines(program, T0, from);
    const first = generator.next().value;
    assert.deepEqual(first, { at: T0 + 365 * 24 * 3600 * 1000 + 10_000, text: 'tick' });
  });

  it('a sleeping loop that prints nothing ends its lines instead of iterating for one', () => {
    // examples/web-pod.yaml's client container: wget prints nothing on the mock.
    const program = mockProgram([
      'sh',
      '-c',
      'echo up; while true; do wget -qO- http://localhost:8080/ || true; sleep 10; done',
    ]);
    assert.deepEqual(
      [...mockLines(program, T0, T0 + 3600_000)].map((l) => l.text),
      [],
    );
    assert.deepEqual(
      [...mockLines(program, T0)].map((l) => l.text),
      ['up'],
    );
  });

  it('a loop without sleep prints its body once and a note', () => {
    const lines = [...mockLines(mockProgram(['sh', '-c', 'while true; do echo spin; done']), T0)];
    assert.deepEqual(
      lines.map((l) => l.text),
      ['spin', BUSY_LOOP_NOTE],
    );
  });
});

describe('mock container logs', () => {
  const ticker = podWith(['sh', '-c', 'echo start; while true; do echo tick; sleep 10; done']);

  it('prints the started line, then what the command prints up to now', async () => {
    assert.equal(
      await read(ticker, T0 + 25_000),
      'mock: started container main (image busybox)\nstart\ntick\ntick\ntick\n',
    );
  });

  it('timestamps: RFC 3339 with nine fractional digits, at the moment each line was printed', async () => {
    const out = await read(ticker, T0 + 10_000, { timestamps: true });
    assert.equal(
      out,
      [
        '2026-03-01T10:00:00.400000000Z mock: started container main (image busybox)',
        '2026-03-01T10:00:00.400000000Z start',
        '2026-03-01T10:00:00.400000000Z tick',
        '2026-03-01T10:00:10.400000000Z tick',
        '',
      ].join('\n'),
    );
    assert.equal(logTimestamp(Date.parse('2026-01-02T03:04:05Z')), '2026-01-02T03:04:05.000000000Z');
  });

  it('tailLines takes the last lines of the whole log, since then drops older ones, limitBytes cuts', async () => {
    assert.equal(await read(ticker, T0 + 45_000, { tailLines: 2 }), 'tick\ntick\n');
    assert.equal(await read(ticker, T0 + 45_000, { tailLines: 0 }), '');
    assert.equal(await read(ticker, T0 + 45_000, { since: new Date(T0 + 30_000) }), 'tick\ntick\n');
    assert.equal(
      await read(ticker, T0 + 45_000, { tailLines: 3, since: new Date(T0 + 35_000) }),
      'tick\n',
      'tail first (ticks at 20, 30, 40 s), since then keeps the one at 40 s',
    );
    assert.equal(await read(ticker, T0 + 45_000, { limitBytes: 10 }), 'mock: star');
  });

  it('keeps only the last hour, as a rotated log would', async () => {
    const out = await read(ticker, T0 + 3 * MOCK_LOG_RETENTION_MS, { timestamps: true });
    const lines = out.trimEnd().split('\n');
    assert.equal(lines.length, MOCK_LOG_RETENTION_MS / 10_000 + 1);
    assert.ok(!out.includes('start'), 'the first lines rotated away');
  });

  it('a finished container ends with its exit line; nothing printed after it', async () => {
    const job = state({ finishAfterSeconds: 15, exitCode: 2 });
    assert.equal(
      await read(ticker, T0 + 60_000, {}, job),
      'mock: started container main (image busybox)\nstart\ntick\ntick\nmock: container main exited with code 2\n',
    );
  });

  it('prints nothing while the pod is still starting', async () => {
    assert.equal(await read(ticker, T0 + 1_000, {}, state({ startDelaySeconds: 5 })), '');
  });

  it('follow yields new lines as they are printed and ends when the container exits', async () => {
    const clock = steppingClock(T0 + 5_000);
    const job = state({ finishAfterSeconds: 25 });
    const stream = mockContainerLog({
      state: job,
      pod: ticker,
      container: 'main',
      options: { follow: true },
      clock,
    });
    assert.equal(
      await text(stream),
      'mock: started container main (image busybox)\nstart\ntick\ntick\ntick\nmock: container main exited with code 0\n',
    );
    assert.equal(clock.now(), T0 + 25_000, 'waited (on the clock) until the exit');
  });

  it('follow of a running container ends when the caller aborts', async () => {
    const controller = new AbortController();
    const clock = steppingClock(T0 + 5_000);
    const pod = podWith(['echo', 'once']);
    const stream = mockContainerLog({
      state: state(),
      pod,
      container: 'main',
      options: { follow: true },
      clock,
      signal: controller.signal,
    });
    const chunks: string[] = [];
    const decoder = new TextDecoder();
    const reading = (async () => {
      for await (const chunk of stream) chunks.push(decoder.decode(chunk));
    })();
    await new Promise((r) => setImmediate(r));
    controller.abort();
    await reading;
    assert.deepEqual(chunks, ['mock: started container main (image busybox)\n', 'once\n']);
  });

  it('limitBytes cuts a stream across chunks and stops reading it', async () => {
    let pulled = 0;
    async function* source() {
      for (const part of ['abc', 'def', 'ghi']) {
        pulled++;
        yield new TextEncoder().encode(part);
      }
    }
    assert.equal(await text(limitBytes(source(), 5)), 'abcde');
    assert.equal(pulled, 2);
  });
});

describe('mock usage', () => {
  it('reports running containers only, steady figures, CPU time growing with run time', () => {
    assert.equal(mockPodUsage(state({ startDelaySeconds: 5 }), T0 + 1_000), undefined);
    assert.equal(mockPodUsage(state({ finishAfterSeconds: 1 }), T0 + 2_000), undefined);
    const first = mockPodUsage(state(), T0 + 10_000);
    const later = mockPodUsage(state(), T0 + 20_000);
    const [a] = first?.containers ?? [];
    const [b] = later?.containers ?? [];
    assert.ok(a?.cpu?.usageNanoCores && a.cpu.usageNanoCores >= 5e6 && a.cpu.usageNanoCores <= 100e6);
    assert.equal(a.cpu.usageNanoCores, b?.cpu?.usageNanoCores);
    assert.equal(a.memory?.workingSetBytes, b?.memory?.workingSetBytes);
    assert.equal(b?.cpu?.usageCoreNanoSeconds, 2 * (a.cpu.usageCoreNanoSeconds ?? 0));
    assert.deepEqual(first?.startTime, new Date(T0));
  });
});
