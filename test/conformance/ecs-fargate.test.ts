/**
 * The provider conformance suite for the ECS Fargate provider, over the AWS
 * simulation (no ECS exists offline; see test/harness/providers/ecs.ts). Every
 * request the functions sent is checked against AWS's published API model:
 * none may break it. Scenarios the simulation cannot express (it runs no
 * processes) are skipped with the reason.
 */
import assert from 'node:assert/strict';
import { after } from 'node:test';
import { ecsProviderSetup } from '../harness/providers/ecs.ts';
import { conformanceSuite } from './conformance-suite.ts';

const setup = ecsProviderSetup();
conformanceSuite(setup);

after(() => {
  assert.deepEqual(setup.aws.violations, [], 'every request fits the published API model');
});
