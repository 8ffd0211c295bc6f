/**
 * A service's regional endpoint, `https://<service>.<region>.<dnsSuffix>`,
 * for the partitions a function runs in (aws, aws-cn, aws-us-gov), read as
 * the SDK's endpoint rules read them (@aws-sdk/core's partitions: a region
 * belongs to the first partition whose region pattern it matches). For any
 * other region this gives undefined, and so it does when FIPS or dual-stack
 * endpoints or endpoint variables are asked for: the caller then loads the
 * SDK's own rules (a dynamic import), which know every variant.
 */

const PARTITIONS = [
  { id: 'aws-us-gov', regionRegex: /^us-gov-\w+-\d+$/, dnsSuffix: 'amazonaws.com' },
  { id: 'aws', regionRegex: /^(us|eu|ap|sa|ca|me|af|il|mx)-\w+-\d+$/, dnsSuffix: 'amazonaws.com' },
  { id: 'aws-cn', regionRegex: /^cn-\w+-\d+$/, dnsSuffix: 'amazonaws.com.cn' },
] as const;

/** The regional endpoint of `service` (`dynamodb`) in `region`, or undefined when the SDK's rules must decide. */
export function regionalEndpoint(service: string, region: string): URL | undefined {
  const partition = PARTITIONS.find((p) => p.regionRegex.test(region));
  return partition ? new URL(`https://${service}.${region}.${partition.dnsSuffix}/`) : undefined;
}
