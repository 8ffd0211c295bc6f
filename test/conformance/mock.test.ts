/**
 * The provider conformance suite for the mock provider. Scenarios the mock
 * cannot express (it runs no processes) are skipped with the reason.
 */
import { mockProviderSetup } from '../harness/providers/mock.ts';
import { conformanceSuite } from './conformance-suite.ts';

conformanceSuite(mockProviderSetup());
