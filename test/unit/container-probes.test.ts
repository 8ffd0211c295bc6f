import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { containerProbes, expandProbeCommands, probeProblems } from '../../lib/provider/container-probes.ts';

const at = 'spec.containers[app]';
const container = (over: Partial<V1Container>): V1Container => ({ name: 'app', image: 'busybox', ...over });

describe('container probes and hooks', () => {
  it('reads probes with the API server defaults, a named port resolved against the container', () => {
    const probes = containerProbes(
      container({
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: {
          httpGet: { port: 'http', path: '/ready', httpHeaders: [{ name: 'X-A', value: 'b' }] },
        },
        livenessProbe: { tcpSocket: { port: 'metrics' }, periodSeconds: 5, failureThreshold: 1 },
        startupProbe: { exec: { command: ['cat', '/tmp/started'] }, initialDelaySeconds: 3 },
        lifecycle: { preStop: { exec: { command: ['sleep', '1'] } } },
      }),
    );
    assert.deepEqual(probes.readiness, {
      action: {
        httpGet: { scheme: 'HTTP', path: '/ready', port: 8080, headers: [{ name: 'X-A', value: 'b' }] },
      },
      initialDelaySeconds: 0,
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    });
    assert.deepEqual(probes.liveness?.action, { tcpSocket: { port: { name: 'metrics' } } });
    assert.equal(probes.liveness?.periodSeconds, 5);
    assert.equal(probes.startup?.initialDelaySeconds, 3);
    assert.deepEqual(probes.preStop, { exec: { command: ['sleep', '1'] } });
  });

  it("expands $(VAR) in exec probe commands from the container's literal env only", () => {
    const c = container({
      env: [
        { name: 'FILE', value: '/tmp/health' },
        { name: 'SECRET', value: 'resolved', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
      ],
      livenessProbe: { exec: { command: ['cat', '$(FILE)', '$(SECRET)', '$$(FILE)'] } },
    });
    const probes = expandProbeCommands(containerProbes(c), c);
    assert.deepEqual(probes.liveness?.action, {
      exec: { command: ['cat', '/tmp/health', '$(SECRET)', '$(FILE)'] },
    });
  });

  it('names every bad field, and the fields of newer API servers', () => {
    const problems = probeProblems(
      at,
      'containers',
      container({
        readinessProbe: { periodSeconds: -1 },
        livenessProbe: {
          exec: { command: ['true'] },
          httpGet: { port: 80 },
          successThreshold: 2,
          terminationGracePeriodSeconds: 5,
        },
        startupProbe: { grpc: { port: 9000 } },
        lifecycle: { postStart: { sleep: { seconds: 1 } }, preStop: { httpGet: { port: 0, scheme: 'FTP' } } },
      }),
    );
    assert.deepEqual(problems, [
      'spec.containers[app].readinessProbe: must specify a handler type',
      'spec.containers[app].readinessProbe.periodSeconds: must be a whole number greater than or equal to 0, not -1',
      "spec.containers[app].livenessProbe.terminationGracePeriodSeconds: a probe's own grace period is not supported (Kubernetes 1.21+); the pod's applies",
      'spec.containers[app].livenessProbe.httpGet: may not specify more than 1 handler type',
      'spec.containers[app].livenessProbe.successThreshold: must be 1 for liveness and startup probes',
      'spec.containers[app].startupProbe.grpc: grpc probes are not supported (Kubernetes 1.24+)',
      'spec.containers[app].lifecycle.postStart.sleep: sleep hooks are not supported (Kubernetes 1.29+)',
      'spec.containers[app].lifecycle.preStop.httpGet.scheme: must be HTTP or HTTPS, not "FTP"',
      'spec.containers[app].lifecycle.preStop.httpGet.port: must be between 1 and 65535, not 0',
    ]);
  });

  it('refuses probes and hooks on init containers, as the API server does', () => {
    assert.deepEqual(
      probeProblems(
        'spec.initContainers[setup]',
        'initContainers',
        container({
          readinessProbe: { exec: { command: ['true'] } },
          lifecycle: { preStop: { exec: { command: ['true'] } } },
        }),
      ),
      [
        'spec.initContainers[setup].readinessProbe: init containers may not have probes',
        'spec.initContainers[setup].lifecycle.preStop: init containers may not have lifecycle hooks',
      ],
    );
  });
});
