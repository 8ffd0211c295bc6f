// esbuild plugins for serverless-esbuild (serverless.yml, custom.esbuild.plugins).
//
// Native add-ons that optional dependencies try to load — ssh2's crypto
// binding and cpu-features, pulled in by dockerode for SSH engines, which the
// Docker provider does not use — are left out of the bundle whether or not
// they were built on this machine (npm may skip building them). Their
// require throws at run time and the callers, which wrap it in try/catch,
// fall back to JavaScript, as they do wherever the add-on failed to build.
const NAMESPACE = 'absent-native-addon';

module.exports = [
  {
    name: NAMESPACE,
    setup(build) {
      build.onResolve({ filter: /^cpu-features$|\.node$/ }, (args) => ({
        path: args.path,
        namespace: NAMESPACE,
      }));
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`native add-on ${args.path} is not bundled`)});`,
        loader: 'js',
      }));
    },
  },
];
