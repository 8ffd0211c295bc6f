import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { toTableDefinition } from '../../lib/state/table-definition.ts';

const root = new URL('../..', import.meta.url).pathname;

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}

describe('serverless package (offline, no AWS credentials)', () => {
  const out = mkdtempSync(join(tmpdir(), 'svk-package-'));
  let resources: Record<string, Resource> = {};

  before(async () => {
    const env = { ...process.env };
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
      delete env[name];
    await promisify(execFile)(
      join(root, 'node_modules/.bin/serverless'),
      ['package', '--stage', 'ci', '--package', out],
      {
        cwd: root,
        env: { ...env, AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent' },
        timeout: 180_000,
      },
    );
    const template = JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
    resources = template.Resources;
  });

  after(() => rmSync(out, { recursive: true, force: true }));

  it('defines the state table from infra/dynamodb-table.yml: keys, index, TTL, PITR, encryption', () => {
    const table = resources.StateTable;
    assert.equal(table?.Type, 'AWS::DynamoDB::Table');
    const expected = toTableDefinition().createTable;
    assert.deepEqual(table.Properties.KeySchema, expected.KeySchema);
    assert.deepEqual(table.Properties.AttributeDefinitions, expected.AttributeDefinitions);
    assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
    assert.deepEqual(table.Properties.TimeToLiveSpecification, { AttributeName: 'expiresAt', Enabled: true });
    assert.deepEqual(table.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
    assert.deepEqual(table.Properties.SSESpecification, { SSEEnabled: true });
    assert.deepEqual(
      (table.Properties.GlobalSecondaryIndexes as Array<{ IndexName: string }>).map((i) => i.IndexName),
      ['gsi1'],
    );
  });

  it('defines the heartbeat function on nodejs22.x, scheduled every minute, with the table name', () => {
    const fn = resources.HeartbeatLambdaFunction;
    assert.equal(fn?.Type, 'AWS::Lambda::Function');
    assert.equal(fn.Properties.Runtime, 'nodejs22.x');
    assert.equal(fn.Properties.Handler, 'functions/heartbeat.handler');
    assert.ok((fn.Properties.Timeout as number) > 120, 'outlives two schedule periods for the hot standby');
    const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.deepEqual(env.SVK_TABLE_NAME, { Ref: 'StateTable' });
    const rules = Object.values(resources).filter(
      (r) =>
        r.Type === 'AWS::Events::Rule' &&
        JSON.stringify(r.Properties.Targets).includes('HeartbeatLambdaFunction'),
    );
    assert.equal(rules.length, 1);
    assert.equal(rules[0]?.Properties.ScheduleExpression, 'rate(1 minute)');
  });

  it('schedules pod-watch and pod-status every minute, and triggers pod-sync from the pod event rule', () => {
    for (const name of ['PodWatchLambdaFunction', 'PodStatusLambdaFunction', 'PodSyncLambdaFunction']) {
      assert.equal(resources[name]?.Properties.Runtime, 'nodejs22.x', name);
    }
    const rules = Object.values(resources).filter((r) => r.Type === 'AWS::Events::Rule');
    const scheduled = (fn: string) =>
      rules.filter(
        (r) => JSON.stringify(r.Properties.Targets).includes(fn) && r.Properties.ScheduleExpression,
      );
    assert.equal(scheduled('PodWatchLambdaFunction').length, 1);
    assert.equal(scheduled('PodStatusLambdaFunction').length, 1);
    const syncRule = rules.find((r) =>
      JSON.stringify(r.Properties.Targets).includes('PodSyncLambdaFunction'),
    );
    assert.ok(syncRule, 'a rule targets pod-sync');
    assert.deepEqual(syncRule.Properties.EventPattern, {
      source: ['serverless-virtual-kubelet.pod-watch'],
      'detail-type': ['PodChanged'],
    });
    assert.deepEqual(syncRule.Properties.EventBusName, { 'Fn::GetAtt': ['PodEventBus', 'Name'] });
    const target = (syncRule.Properties.Targets as Array<Record<string, unknown>>)[0];
    assert.deepEqual(target?.DeadLetterConfig, { Arn: { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'Arn'] } });
    assert.deepEqual(target?.RetryPolicy, { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 20 });
  });

  it('sends pod-sync failures after Lambda retries to the dead-letter queue', () => {
    const config = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && JSON.stringify(r.Properties).includes('PodSync'),
    );
    assert.ok(config, 'an EventInvokeConfig for pod-sync');
    assert.equal(config.Properties.MaximumRetryAttempts, 2);
    assert.deepEqual(config.Properties.DestinationConfig, {
      OnFailure: { Destination: { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'Arn'] } },
    });
  });

  it('bundles the heartbeat as one ESM file', () => {
    const listing = readFileSync(join(out, 'heartbeat.zip')).toString('latin1');
    assert.match(listing, /functions\/heartbeat\.mjs/);
  });
});
