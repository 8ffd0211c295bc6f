import type Docker from 'dockerode';

/**
 * The engine's name, for node info and `npm start`'s first lines, from its
 * version answer: Podman names its component `Podman Engine`, Docker Engine
 * only `Engine`.
 */
export function engineName(version: Pick<Docker.DockerVersion, 'Components'>): string {
  const component = version.Components?.find((c) => /engine/i.test(c.Name))?.Name;
  return component === undefined || component === 'Engine' ? 'Docker Engine' : component;
}
