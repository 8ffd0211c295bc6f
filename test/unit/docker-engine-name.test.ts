import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { engineName } from '../../lib/provider/docker/engine-name.ts';

const component = (Name: string) => ({ Name, Version: '', Details: {} as never });

describe('engineName', () => {
  it('names Podman by its component', () => {
    assert.equal(engineName({ Components: [component('Podman Engine')] }), 'Podman Engine');
  });
  it('names Docker Engine, whose component is only "Engine"', () => {
    assert.equal(
      engineName({ Components: [component('Engine'), component('containerd'), component('runc')] }),
      'Docker Engine',
    );
  });
  it('falls back to Docker Engine without components', () => {
    assert.equal(engineName({ Components: [] }), 'Docker Engine');
  });
});
