import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { ECSClient } from '@aws-sdk/client-ecs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { awsClientOptions } from '../../aws/client-options.ts';

/** The AWS clients of the ECS provider. */
export interface EcsAwsClients {
  ecs: ECSClient;
  logs: CloudWatchLogsClient;
  ssm: SSMClient;
}

/**
 * Builds the three clients for `region`, with the default credential chain
 * (the function's role). With `endpoint` (SVK_ECS_ENDPOINT: a simulation of
 * the three services, as the tests use) every request goes there instead,
 * signed with a placeholder key the simulation does not check. Each client
 * has request timeouts that fire and the invocation's deadline
 * (awsClientOptions).
 */
export function createEcsAwsClients(region: string, endpoint?: string): EcsAwsClients {
  const common = () => ({
    region,
    ...awsClientOptions(),
    ...(endpoint
      ? { endpoint, credentials: { accessKeyId: 'simulation', secretAccessKey: 'simulation' } }
      : {}),
  });
  return {
    ecs: new ECSClient(common()),
    logs: new CloudWatchLogsClient(common()),
    ssm: new SSMClient(common()),
  };
}
