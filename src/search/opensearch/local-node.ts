/**
 * A local single-node OpenSearch for `npm start` and the tests when no OPENSEARCH_URL is given,
 * made from Maven Central artifacts only (as the Temporal time-skipping server is): OpenSearch
 * 2.19.1 with the k-NN plugin (lucene HNSW; the Maven zip carries no native engine), the common
 * analyzers and painless, started on Java 17 by a small launcher class compiled here into the
 * project's tool cache. It listens on 127.0.0.1 on a free port, keeps its data under the data
 * directory (a restart finds its indexes again) and stops with SIGTERM.
 *
 * This is a development node: no security plugin, one node, no replicas. Production points
 * OPENSEARCH_URL at a real cluster (docker-compose runs the official image).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findOnPath, run } from '../../temporal/tools';

export const OPENSEARCH_VERSION = '2.19.1';
export const KNN_VERSION = '2.19.1.0';
const LOG4J_VERSION = '2.21.0';

const LAUNCHER_CLASS = 'LocalOpenSearch';

/** The launcher: a Node subclass (its protected constructor takes classpath plugins), the HTTP port written to a file once it listens. */
const LAUNCHER_SOURCE = `import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.knn.plugin.KNNPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/** args: home, data directory, HTTP port (0: any free one), file to write the bound port to, then key=value settings. */
public class ${LAUNCHER_CLASS} {
  static final class LocalNode extends Node {
    LocalNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
      super(environment, plugins, true);
    }
  }

  public static void main(String[] args) throws Exception {
    Settings.Builder builder = Settings.builder()
        .put("path.home", args[0])
        .put("path.data", args[1])
        .put("network.host", "127.0.0.1")
        .put("http.port", args[2])
        .put("transport.port", "0")
        .put("discovery.type", "single-node")
        .put("cluster.name", "partner-api-search")
        .put("node.name", "local")
        .put("action.auto_create_index", "false")
        // A node on a shared disk (npm start, the tests): OpenSearch counts every byte the file
        // system does not offer it as used, and past its default 90 % blocked creating any index
        // (FORBIDDEN/10; seen on 2026-11-28 while df said 75 % used, 24 GB free). Its watermarks
        // here are free space instead; a full disk still turns the index read-only.
        .put("cluster.routing.allocation.disk.watermark.low", "2gb")
        .put("cluster.routing.allocation.disk.watermark.high", "1gb")
        .put("cluster.routing.allocation.disk.watermark.flood_stage", "500mb");
    // Further settings as key=value (a node of a cluster: its name, transport port and seed hosts).
    for (int i = 4; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      builder.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    if (builder.get("discovery.seed_hosts") != null) builder.remove("discovery.type");
    Settings settings = builder.build();
    Environment environment = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> "local");
    List<Class<? extends Plugin>> plugins = List.of(Netty4Plugin.class, KNNPlugin.class, CommonAnalysisPlugin.class, PainlessPlugin.class);
    Node node = new LocalNode(environment, plugins).start();
    // The node's own threads are daemons: main waits until a signal's shutdown hook has closed it.
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        node.close();
      } catch (Exception e) {
        e.printStackTrace();
      } finally {
        closed.countDown();
      }
    }));
    int port = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().getPort();
    Path portFile = Path.of(args[3]);
    Path written = Path.of(args[3] + ".tmp");
    Files.writeString(written, port + "\\n");
    Files.move(written, portFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    closed.await();
  }
}
`;

const LOG4J_CONFIG = `status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %marker%m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
`;

function pom(): string {
  const dependency = (group: string, artifact: string, version: string, type?: string) =>
    `    <dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${version}</version>${type ? `<type>${type}</type>` : ''}</dependency>`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.tools</groupId>
  <artifactId>opensearch-local-node</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
${[
  dependency('org.opensearch', 'opensearch', OPENSEARCH_VERSION),
  dependency('org.opensearch.plugin', 'transport-netty4-client', OPENSEARCH_VERSION),
  dependency('org.opensearch.plugin', 'analysis-common', OPENSEARCH_VERSION),
  dependency('org.opensearch.plugin', 'lang-painless', OPENSEARCH_VERSION),
  dependency('org.apache.logging.log4j', 'log4j-core', LOG4J_VERSION),
  dependency('org.opensearch.plugin', 'opensearch-knn', KNN_VERSION, 'zip'),
].join('\n')}
  </dependencies>
</project>
`;
}

function progress(message: string): void {
  process.stderr.write(`[tools] ${message}\n`);
}

export interface OpenSearchTools {
  java: string;
  classpath: string;
  log4jConfig: string;
}

/**
 * Resolves the node's jars with Maven into the tool cache (~65 MB, once), unpacks the k-NN
 * plugin's zip beside them and compiles the launcher; later calls find them there.
 */
export async function ensureOpenSearch(cacheDir: string): Promise<OpenSearchTools> {
  const dir = path.join(cacheDir, `opensearch-${OPENSEARCH_VERSION}`);
  const classpathFile = path.join(dir, 'classpath.txt');
  const classesDir = path.join(dir, 'classes');
  const log4jConfig = path.join(dir, 'log4j2.properties');
  const java = findOnPath('java');
  const javac = findOnPath('javac');
  const mvn = findOnPath('mvn');
  if (!java) throw new Error('the local OpenSearch node needs Java 17 (apt-get install openjdk-17-jdk-headless maven), or set OPENSEARCH_URL');
  const resolved = () => existsSync(classpathFile) && readFileSync(classpathFile, 'utf8').split(path.delimiter).every((e) => existsSync(e));
  if (!resolved()) {
    if (!mvn) throw new Error('the local OpenSearch node needs Maven to be set up (apt-get install maven), or set OPENSEARCH_URL');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'pom.xml'), pom());
    progress(`resolving OpenSearch ${OPENSEARCH_VERSION} and k-NN ${KNN_VERSION} from Maven Central`);
    const jarsFile = path.join(dir, 'jars.txt');
    await run(mvn, ['-q', '-B', 'dependency:build-classpath', '-DexcludeTypes=zip', `-Dmdep.outputFile=${jarsFile}`], { cwd: dir, label: 'mvn dependency:build-classpath' });
    const knnDir = path.join(dir, 'knn');
    rmSync(knnDir, { recursive: true, force: true });
    await run(mvn, ['-q', '-B', 'dependency:unpack-dependencies', '-DincludeTypes=zip', `-DoutputDirectory=${knnDir}`], { cwd: dir, label: 'mvn dependency:unpack-dependencies' });
    const knnJars = readdirSync(knnDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jar')).map((f) => path.join(knnDir, f));
    // The plugin's zip carries its own copies of some core jars; the core's come first.
    writeFileSync(classpathFile, [readFileSync(jarsFile, 'utf8').trim(), ...knnJars].join(path.delimiter));
    progress(`OpenSearch ${OPENSEARCH_VERSION} resolved in ${dir}`);
  }
  const classpath = readFileSync(classpathFile, 'utf8').trim();
  // The launcher, compiled again whenever its source here changes.
  const source = path.join(dir, `${LAUNCHER_CLASS}.java`);
  if (!existsSync(path.join(classesDir, `${LAUNCHER_CLASS}.class`)) || !existsSync(source) || readFileSync(source, 'utf8') !== LAUNCHER_SOURCE) {
    if (!javac) throw new Error('the local OpenSearch node needs a JDK to compile its launcher (apt-get install openjdk-17-jdk-headless), or set OPENSEARCH_URL');
    mkdirSync(classesDir, { recursive: true });
    writeFileSync(source, LAUNCHER_SOURCE);
    await run(javac, ['-d', classesDir, '-cp', classpath, source], { label: 'javac LocalOpenSearch' });
  }
  writeFileSync(log4jConfig, LOG4J_CONFIG);
  return { java, classpath: `${classesDir}${path.delimiter}${classpath}`, log4jConfig };
}

export interface LocalOpenSearch {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Settles with how it ended (`code 1`, `signal SIGKILL`). */
  exited: Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface LocalOpenSearchOptions {
  cacheDir: string;
  /** Its data (`<dataDir>/opensearch`): kept across restarts. */
  dataDir: string;
  /** The JVM heap, e.g. `512m` (OPENSEARCH_HEAP). */
  heap?: string;
  /** The HTTP port; 0 (the default): a free one. A supervisor passes the first run's port again, so its clients' URL stays right. */
  port?: number;
  /** Further node settings (a node of a several-node cluster: `node.name`, `transport.port`, `discovery.seed_hosts`, `cluster.initial_cluster_manager_nodes`). */
  settings?: Record<string, string>;
  log?: (m: string) => void;
}

/** Starts the node and resolves once it listens (the launcher writes its port after the node has started). */
export async function startLocalOpenSearch(options: LocalOpenSearchOptions): Promise<LocalOpenSearch> {
  const tools = await ensureOpenSearch(options.cacheDir);
  const home = path.join(options.dataDir, 'opensearch');
  const data = path.join(home, 'data');
  mkdirSync(path.join(home, 'config'), { recursive: true });
  mkdirSync(path.join(home, 'plugins'), { recursive: true });
  mkdirSync(data, { recursive: true });
  const portFile = path.join(home, 'http.port');
  rmSync(portFile, { force: true });
  const heap = options.heap ?? '512m';
  const child = spawn(
    tools.java,
    [`-Xms${heap}`, `-Xmx${heap}`, '-XX:+UseSerialGC', '-Djava.awt.headless=true', '-Dfile.encoding=UTF-8', `-Dlog4j2.configurationFile=${tools.log4jConfig}`, '-cp', tools.classpath, LAUNCHER_CLASS, home, data, String(options.port ?? 0), portFile, ...Object.entries(options.settings ?? {}).map(([k, v]) => `${k}=${v}`)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    output.splice(0, Math.max(0, output.length - 80));
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`)));
  const stopOnExit = () => child.exitCode === null && child.signalCode === null && child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  void exited.then(() => process.off('exit', stopOnExit));
  const stop = async (graceMs = 20_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 120_000;
  let url: string | undefined;
  while (!url) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`OpenSearch exited while starting (${await exited}):\n${output.join('\n')}`);
    if (Date.now() > deadline) {
      await stop(2_000);
      throw new Error(`OpenSearch did not start within 120 s:\n${output.join('\n')}`);
    }
    if (existsSync(portFile)) url = `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}`;
    else await new Promise((r) => setTimeout(r, 100));
  }
  options.log?.(`OpenSearch ${OPENSEARCH_VERSION} (local node, pid ${child.pid}) on ${url}`);
  return { url, pid: child.pid!, child, exited, stop };
}
