/** Deciding the template's Conditions at package time (scripts/fold-conditions.mjs, the osls plugin). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideConditions, foldConditions } from '../../scripts/fold-conditions.mjs';

const policy = (extra: Record<string, unknown> = {}) => ({
  Type: 'AWS::IAM::ManagedPolicy',
  Properties: {},
  ...extra,
});

describe('foldConditions', () => {
  it('decides the Conditions whose operands are values, as CloudFormation compares them (as strings)', () => {
    const decided = decideConditions({
      HasDomain: { 'Fn::Not': [{ 'Fn::Equals': ['nodes.example.com', ''] }] },
      HasTopic: { 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] },
      Alarms: { 'Fn::Equals': [true, 'true'] },
      Both: { 'Fn::And': [{ Condition: 'HasDomain' }, { Condition: 'HasTopic' }] },
      Either: { 'Fn::Or': [{ Condition: 'HasDomain' }, { Condition: 'HasTopic' }] },
      InRegion: { 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'us-east-1'] },
      // Decided by its false operand whatever the other is.
      RegionAndTopic: { 'Fn::And': [{ Condition: 'InRegion' }, { Condition: 'HasTopic' }] },
    });
    assert.deepEqual(Object.fromEntries(decided), {
      HasDomain: true,
      HasTopic: false,
      Alarms: true,
      Both: false,
      Either: true,
      RegionAndTopic: false,
    });
  });

  it('leaves out what a false Condition guards, takes the Fn::If branch, drops AWS::NoValue', () => {
    const { template, removed } = foldConditions({
      Conditions: {
        HasApi: { 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] },
        HasCluster: { 'Fn::Not': [{ 'Fn::Equals': ['svk', ''] }] },
      },
      Resources: {
        Api: policy({ Condition: 'HasApi' }),
        Cluster: policy({ Condition: 'HasCluster' }),
        Role: {
          Type: 'AWS::IAM::Role',
          Properties: {
            ManagedPolicyArns: [
              { 'Fn::If': ['HasApi', { Ref: 'Api' }, { Ref: 'AWS::NoValue' }] },
              { 'Fn::If': ['HasCluster', { Ref: 'Cluster' }, { Ref: 'AWS::NoValue' }] },
            ],
            Description: { 'Fn::If': ['HasApi', 'with an API', { Ref: 'AWS::NoValue' }] },
          },
        },
      },
      Outputs: { ApiId: { Condition: 'HasApi', Value: { Ref: 'Api' } } },
    });
    assert.deepEqual(removed, ['Resources/Api', 'Outputs/ApiId']);
    assert.deepEqual(template, {
      Resources: {
        Cluster: policy(),
        Role: { Type: 'AWS::IAM::Role', Properties: { ManagedPolicyArns: [{ Ref: 'Cluster' }] } },
      },
    });
  });

  it('keeps a Condition only known at deploy time, and what it guards, as they are', () => {
    const input = {
      Parameters: { Topic: { Type: 'String' } },
      Conditions: {
        HasTopic: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'Topic' }, ''] }] },
        Alarms: { 'Fn::Equals': ['true', 'true'] },
        NotifyAlarms: { 'Fn::And': [{ Condition: 'HasTopic' }, { Condition: 'Alarms' }] },
      },
      Resources: {
        Alarm: {
          Type: 'AWS::CloudWatch::Alarm',
          Condition: 'Alarms',
          Properties: {
            AlarmActions: [{ 'Fn::If': ['NotifyAlarms', { Ref: 'Topic' }, { Ref: 'AWS::NoValue' }] }],
          },
        },
      },
    };
    const { template } = foldConditions(input);
    assert.deepEqual(template.Conditions, {
      HasTopic: input.Conditions.HasTopic,
      // The decided Condition it named, written as the constant it is.
      NotifyAlarms: { 'Fn::And': [{ Condition: 'HasTopic' }, { 'Fn::Equals': ['true', 'true'] }] },
    });
    assert.deepEqual(template.Resources?.Alarm, {
      Type: 'AWS::CloudWatch::Alarm',
      Properties: input.Resources.Alarm.Properties,
    });
  });

  it('refuses a template where something that stays refers to a resource left out, naming both', () => {
    const template = {
      Conditions: { HasApi: { 'Fn::Equals': ['', 'x'] } },
      Resources: {
        Api: policy({ Condition: 'HasApi' }),
        Alarm: {
          Type: 'AWS::CloudWatch::Alarm',
          Properties: { Dimensions: [{ Value: { 'Fn::Sub': `$\{Api.Arn}` } }] },
        },
      },
    };
    assert.throws(
      () => foldConditions(template),
      /Resources\/Alarm refers to Api, which its Condition leaves out/,
    );
  });

  it('names a Condition used but not defined, or defined in a circle', () => {
    assert.throws(() => decideConditions({ A: { Condition: 'B' } }), /Condition B is used but not defined/);
    assert.throws(
      () => decideConditions({ A: { 'Fn::Not': [{ Condition: 'A' }] } }),
      /Condition A refers to itself/,
    );
  });

  it('refuses a configuration its PackageRefusals name, with their messages, and leaves them out of the template', () => {
    const template = (domain: string, identity: string) => ({
      Metadata: { PackageRefusals: { ApiWithoutIdentity: 'set apiKubeconfig' }, Other: 'kept' },
      Conditions: {
        HasApi: { 'Fn::Not': [{ 'Fn::Equals': [domain, ''] }] },
        ApiWithoutIdentity: {
          'Fn::And': [{ Condition: 'HasApi' }, { 'Fn::Equals': [identity, ''] }],
        },
      },
      Resources: { Api: policy({ Condition: 'HasApi' }) },
    });
    assert.throws(
      () => foldConditions(template('nodes.example.com', '')),
      /this configuration cannot be packaged: set apiKubeconfig/,
    );
    const folded = foldConditions(template('nodes.example.com', 'arn:secret')).template;
    assert.deepEqual(folded.Metadata, { Other: 'kept' });
    assert.ok(folded.Resources?.Api);
    assert.equal(foldConditions(template('', '')).template.Resources?.Api, undefined);
    assert.throws(
      () =>
        foldConditions({
          Metadata: { PackageRefusals: { Later: 'x' } },
          Parameters: { P: { Type: 'String' } },
          Conditions: { Later: { 'Fn::Equals': [{ Ref: 'P' }, ''] } },
        }),
      /PackageRefusals names Later, which is not a Condition decided at package time/,
    );
  });
});
