/**
 * A node's serving certificate from the cluster's own signer, as a kubelet
 * with `serverTLSBootstrap: true` gets it (kubelet's certificate/kubelet.go):
 * a CertificateSigningRequest for `kubernetes.io/kubelet-serving` with
 * subject `system:node:<node>` in `system:nodes`, the node's address as its
 * only subjectAltName, and the usages digital signature, key encipherment and
 * server auth (what the signer's ValidateKubeletServingCSR demands). No
 * controller approves such requests (kube-controller-manager approves only
 * kubelet client certificates), so `npm start` approves its own when its
 * kubeconfig may (`approve` on `signers/kubernetes.io/kubelet-serving`, a
 * cluster admin's), and otherwise waits a little for someone else (an
 * approver such as kubelet-csr-approver, or `kubectl certificate approve`).
 * The controller manager's signer then signs it with the cluster CA on
 * kubeadm, kind, k3s and minikube, which an API server with
 * `--kubelet-certificate-authority` trusts. Key and certificate are kept in
 * `dir` and reused while valid for this node's address.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { CertificatesV1Api, V1CertificateSigningRequest } from '@kubernetes/client-node';
import { apiErrorMessage } from '../../kube/api-error-message.ts';
import { isForbidden } from '../../kube/client.ts';
import { newCertificateRequest } from '../control-plane/pki.ts';
import type { ServingPem } from '../local-kubelet-api.ts';

export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
const USAGES = ['digital signature', 'key encipherment', 'server auth'];
/** A kept certificate is renewed when it has less than this left. */
const RENEW_BEFORE_MS = 24 * 3600_000;
const POLL_MS = 500;

export interface ClusterServingOptions {
  certificates: CertificatesV1Api;
  node: string;
  address: string;
  /** Where this cluster's serving keys and certificates are kept between starts. */
  dir: string;
  log: (line: string) => void;
  /** How long approval and signing may take (default 20 s). */
  timeoutMs?: number;
}

/** The certificate and key, and how they were had, for the start's output. */
export type ClusterServing = { pem: ServingPem; how: string } | { failed: string };

/** A kept or newly signed serving certificate for `node` at `address`, or why there is none. */
export async function servingFromCluster(options: ClusterServingOptions): Promise<ClusterServing> {
  const { node, address, dir } = options;
  mkdirSync(dir, { recursive: true });
  const files = { cert: join(dir, `${node}.crt`), key: join(dir, `${node}.key`) };
  const kept = keptCertificate(files, address);
  if (kept) return { pem: kept, how: `kept from an earlier start (${files.cert})` };
  rmSync(files.cert, { force: true });
  const request = await newCertificateRequest(
    node,
    { commonName: `system:node:${node}`, organizations: ['system:nodes'], altNames: [`IP:${address}`] },
    dir,
  );
  const answer = await requestSigned(options, readFileSync(request.csr));
  rmSync(request.csr, { force: true });
  if ('failed' in answer) {
    rmSync(files.key, { force: true });
    return answer;
  }
  writeFileSync(files.cert, answer.cert);
  return { pem: { cert: answer.cert, key: readFileSync(files.key, 'utf8') }, how: answer.how };
}

/** The kept certificate when it still names `address` and has a day left. */
function keptCertificate(files: { cert: string; key: string }, address: string): ServingPem | undefined {
  if (!existsSync(files.cert) || !existsSync(files.key)) return undefined;
  const cert = readFileSync(files.cert, 'utf8');
  try {
    const leaf = new X509Certificate(cert);
    if (Date.parse(leaf.validTo) - Date.now() < RENEW_BEFORE_MS || !leaf.checkIP(address)) return undefined;
  } catch {
    return undefined;
  }
  return { cert, key: readFileSync(files.key, 'utf8') };
}

async function requestSigned(
  options: ClusterServingOptions,
  csr: Buffer,
): Promise<{ cert: string; how: string } | { failed: string }> {
  const { certificates, node, log } = options;
  let created: V1CertificateSigningRequest;
  try {
    created = await certificates.createCertificateSigningRequest({
      body: {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: { generateName: `svk-serving-${node}-` },
        spec: { request: csr.toString('base64'), signerName: KUBELET_SERVING_SIGNER, usages: USAGES },
      },
    });
  } catch (err) {
    return { failed: `creating a CertificateSigningRequest failed: ${apiErrorMessage(err)}` };
  }
  const name = created.metadata?.name ?? '';
  const approved = await approve(certificates, created);
  if (approved !== true) {
    log(
      `CertificateSigningRequest ${name} (${KUBELET_SERVING_SIGNER}) needs approval: ${approved}; waiting for it (kubectl certificate approve ${name})`,
    );
  }
  const signed = await waitSigned(certificates, name, options.timeoutMs ?? 20_000);
  if ('failed' in signed) {
    await certificates.deleteCertificateSigningRequest({ name }).catch(() => undefined);
    return { failed: `CertificateSigningRequest ${name}: ${signed.failed}` };
  }
  const by = approved === true ? 'approved by npm start' : 'approved by someone else';
  return { cert: signed.cert, how: `CertificateSigningRequest ${name} (${KUBELET_SERVING_SIGNER}, ${by})` };
}

/** Approves `csr`; true when done, else why not. */
async function approve(
  certificates: CertificatesV1Api,
  csr: V1CertificateSigningRequest,
): Promise<true | string> {
  try {
    await certificates.replaceCertificateSigningRequestApproval({
      name: csr.metadata?.name ?? '',
      body: {
        ...csr,
        status: {
          conditions: [
            {
              type: 'Approved',
              status: 'True',
              reason: 'ServerlessVirtualKubeletStart',
              message: 'npm start approved the serving certificate of its local kubelet API',
            },
          ],
        },
      },
    });
    return true;
  } catch (err) {
    return isForbidden(err) ? 'this kubeconfig may not approve it' : apiErrorMessage(err);
  }
}

/** Polls until the signer wrote the certificate, the request was denied or failed, or the deadline. */
async function waitSigned(
  certificates: CertificatesV1Api,
  name: string,
  timeoutMs: number,
): Promise<{ cert: string } | { failed: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const csr = await certificates.readCertificateSigningRequest({ name });
    if (csr.status?.certificate)
      return { cert: Buffer.from(csr.status.certificate, 'base64').toString('utf8') };
    const refusal = csr.status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Failed');
    if (refusal) return { failed: `${refusal.type}: ${refusal.message ?? refusal.reason ?? ''}` };
    if (Date.now() > deadline) {
      const approved = csr.status?.conditions?.some((c) => c.type === 'Approved');
      return {
        failed: approved
          ? `approved but not signed within ${timeoutMs / 1000} s (does the cluster run the kubelet-serving signer?)`
          : `not approved within ${timeoutMs / 1000} s`,
      };
    }
    await delay(POLL_MS);
  }
}
