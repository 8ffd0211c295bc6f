import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  deployedRetryPolicy,
  LAMBDA_ASYNC_RETRY_DELAYS_MS,
  RetryPolicyError,
} from '../../lib/local/async-retry-policy.ts';

const YML = `
functions:
  podSync:
    handler: functions/pod-sync.handler
    role: !GetAtt PodSyncRole.Arn
    maximumRetryAttempts: 2
    maximumEventAge: 3600
    destinations:
      onFailure:
        type: sqs
        arn: !GetAtt PodSyncDeadLetterQueue.Arn
    events:
      - eventBridge:
          eventBus: !GetAtt PodEventBus.Name
          retryPolicy:
            maximumEventAge: 3600
            maximumRetryAttempts: 20
          deadLetterQueueArn: !Sub '\${AWS::StackName}-dlq'
`;

describe('the deployed retry policy', () => {
  it("is read from serverless.yml itself: pod-sync's two retries one and two minutes apart within an hour", () => {
    assert.deepEqual(deployedRetryPolicy('podSync'), {
      retries: 2,
      retryDelaysMs: LAMBDA_ASYNC_RETRY_DELAYS_MS,
      maxEventAgeMs: 3_600_000,
      rule: { maximumRetryAttempts: 20, maximumEventAgeMs: 3_600_000 },
    });
    assert.deepEqual(LAMBDA_ASYNC_RETRY_DELAYS_MS, [60_000, 120_000]);
    assert.equal(deployedRetryPolicy('ecsTaskState').maxEventAgeMs, 600_000);
  });

  it('reads CloudFormation tags without choking on them', () => {
    assert.equal(deployedRetryPolicy('podSync', YML).retries, 2);
  });

  it('names the field that is missing or not a number', () => {
    const cases: Array<[string, RegExp]> = [
      [
        YML.replace('maximumRetryAttempts: 2', 'maximumRetryAttempts: two'),
        /functions\.podSync\.maximumRetryAttempts/,
      ],
      [YML.replace('    maximumEventAge: 3600\n', ''), /functions\.podSync\.maximumEventAge/],
      [
        YML.replace('maximumRetryAttempts: 20', 'maximumRetryAttempts: -1'),
        /functions\.podSync\.events\.0\.retryPolicy\.maximumRetryAttempts/,
      ],
      [YML, /functions\.nope/],
    ];
    for (const [yml, field] of cases) {
      const name = yml === YML ? 'nope' : 'podSync';
      assert.throws(
        () => deployedRetryPolicy(name, yml),
        (err: unknown) => err instanceof RetryPolicyError && field.test(err.message),
        String(field),
      );
    }
  });
});
