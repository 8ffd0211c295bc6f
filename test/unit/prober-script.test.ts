import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { GENERATED, proberModuleText } from '../../scripts/build-prober.ts';

describe('the prober script', () => {
  it('is the bundle of the prober as it is now (npm run build:prober rewrites it)', async () => {
    assert.equal(
      readFileSync(GENERATED, 'utf8'),
      await proberModuleText(),
      'lib/provider/docker/prober/prober-script.generated.ts is stale: run npm run build:prober',
    );
  });
});
