/**
 * The provider conformance suite for the docker provider: real containers
 * under the run's Podman service.
 */
import { dockerProviderSetup } from '../harness/providers/docker.ts';
import { testEnv } from '../support/env.ts';
import { conformanceSuite } from './conformance-suite.ts';

conformanceSuite(dockerProviderSetup(testEnv()));
