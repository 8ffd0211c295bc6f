import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { removalOf, removeOnce } from '../../lib/provider/docker/removals-in-flight.ts';

function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  let reject: (err: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('docker provider: one removal of a pod uid at a time in a process', () => {
  it('joins a second removal of the same uid to the first, and runs another uid at once', async () => {
    const first = deferred<number>();
    let runs = 0;
    const a = removeOnce('uid-a', () => {
      runs++;
      return first.promise;
    });
    const again = removeOnce('uid-a', async () => {
      runs++;
      return 99;
    });
    const other = removeOnce('uid-b', async () => 7);
    assert.equal(removalOf('uid-a'), a, 'a poller sees the removal running');
    assert.equal(again, a, 'the second removal is the first');
    assert.equal(await other, 7);
    first.resolve(3);
    assert.deepEqual(await Promise.all([a, again]), [3, 3]);
    assert.equal(runs, 1, 'the removal ran once');
  });

  it('forgets a removal once it settled, also when it failed, so that a later one runs afresh', async () => {
    const failing = deferred<number>();
    const a = removeOnce('uid-c', () => failing.promise);
    failing.reject(new Error('engine down'));
    await assert.rejects(a, /engine down/);
    assert.equal(removalOf('uid-c'), undefined);
    assert.equal(await removeOnce('uid-c', async () => 2), 2);
    assert.equal(removalOf('uid-c'), undefined);
  });
});
