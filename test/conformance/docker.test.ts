/**
 * The provider conformance suite for the docker provider: real containers
 * on the run's engine (Podman, or Docker Engine with SVK_TEST_ENGINE=dockerd).
 */
import { dockerProviderSetup } from '../harness/providers/docker.ts';
import { testEnv } from '../support/env.ts';
import { conformanceSuite } from './conformance-suite.ts';

conformanceSuite(dockerProviderSetup(testEnv()));
