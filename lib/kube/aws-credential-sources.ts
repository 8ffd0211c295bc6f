import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { AwsCredentials } from './eks-token.ts';

/**
 * The AWS calls cluster credentials need: the only module that imports the
 * Secrets Manager, SSM and EKS SDKs and the default credential chain. Each
 * SDK is imported when first used (with the SDK clients' options), so a
 * function configured with a kubeconfig file (or one source) does not load
 * the others at cold start.
 */
export interface ClusterCredentialSources {
  /** SecretString of a Secrets Manager secret (name or ARN). */
  secretString(secretId: string): Promise<string>;
  /** Decrypted value of an SSM parameter (name or ARN), e.g. a SecureString. */
  parameterValue(name: string): Promise<string>;
  /** The cluster's API endpoint and base64 CA bundle (eks:DescribeCluster). */
  describeCluster(name: string): Promise<{ endpoint: string; caData: string }>;
  /** This function's AWS credentials (the Lambda role's, from the environment). */
  credentials(): Promise<AwsCredentials>;
}

/** A source answered, but not with what we need (no SecretString, no endpoint...). */
export class CredentialSourceError extends Error {
  override readonly name = 'CredentialSourceError';
}

/**
 * The sources over the AWS SDK. `clients` replaces the Secrets Manager or SSM
 * client (tests: the real client with its transport replaced).
 */
export function awsCredentialSources(options: {
  region: string;
  clients?: { secretsManager?: SecretsManagerClient; ssm?: SSMClient };
}): ClusterCredentialSources {
  const { region, clients = {} } = options;
  let provider: (() => Promise<AwsCredentials>) | undefined;
  return {
    async secretString(secretId) {
      const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
      const { awsClientOptions } = await import('../aws/client-options.ts');
      const client = clients.secretsManager ?? new SecretsManagerClient({ region, ...awsClientOptions() });
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      if (out.SecretString) return out.SecretString;
      if (out.SecretBinary) return Buffer.from(out.SecretBinary).toString('utf8');
      throw new CredentialSourceError(`secret ${secretId} has no value`);
    },
    async parameterValue(name) {
      const { SSMClient, GetParameterCommand } = await import('@aws-sdk/client-ssm');
      const { awsClientOptions } = await import('../aws/client-options.ts');
      const client = clients.ssm ?? new SSMClient({ region, ...awsClientOptions() });
      const out = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
      const value = out.Parameter?.Value;
      if (!value) throw new CredentialSourceError(`SSM parameter ${name} has no value`);
      return value;
    },
    async describeCluster(name) {
      const { EKSClient, DescribeClusterCommand } = await import('@aws-sdk/client-eks');
      const { awsClientOptions } = await import('../aws/client-options.ts');
      const out = await new EKSClient({ region, ...awsClientOptions() }).send(
        new DescribeClusterCommand({ name }),
      );
      const endpoint = out.cluster?.endpoint;
      const caData = out.cluster?.certificateAuthority?.data;
      if (!endpoint || !caData)
        throw new CredentialSourceError(`EKS cluster ${name} has no endpoint or certificate authority yet`);
      return { endpoint, caData };
    },
    async credentials() {
      if (!provider) {
        const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
        provider = defaultProvider();
      }
      return provider();
    },
  };
}
