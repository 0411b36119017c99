package engine

import (
	"cmp"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func registerStandard(e *Engine) {
	registerString(e)
	registerBits(e) // cmd_bits.go
	registerKeys(e)
	registerRename(e)
	registerDump(e)    // cmd_dump.go
	registerMigrate(e) // cmd_migrate.go
	registerScript(e)
	registerFunctions(e) // functions.go
	registerServer(e)
	registerConfig(e)
	registerPubSub(e)
	registerHash(e)    // cmd_hash.go
	registerList(e)    // cmd_list.go
	registerZset(e)    // cmd_zset.go
	registerZsetOps(e) // cmd_zsetops.go
	registerSet(e)     // cmd_set.go
	registerObject(e)  // cmd_object.go
	registerCAS(e)     // cmd_cas.go
	registerAdmin(e)   // cmd_admin.go
	registerSort(e)    // cmd_sort.go
	registerLolwut(e)  // cmd_lolwut.go
	registerObserve(e) // obs: SLOWLOG and its parameters (engine/slowlog.go); after the other commands
}

func registerServer(e *Engine) {
	e.Register(
		&Command{Name: "ping", Arity: -1, Flags: FlagFast | FlagNoKeys, Group: "connection", Fn: cmdPing},
		&Command{Name: "echo", Arity: 2, Flags: FlagFast | FlagNoKeys | FlagLoading | FlagStale, Group: "connection", Fn: func(c *Ctx) { c.W.WriteBulk(c.Args[1]) }},
		&Command{Name: "select", Arity: 2, Flags: FlagFast | FlagLoading | FlagStale, Group: "connection", Fn: cmdSelect},
		&Command{Name: "time", Arity: 1, Flags: FlagFast | FlagNoKeys | FlagLoading | FlagStale, Group: "server", Fn: cmdTime},
		&Command{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale | flagStats, Group: "server", Fn: cmdInfo},
		&Command{Name: "cluster", Arity: -2, Flags: FlagNoKeys, Group: "cluster", Subs: clusterSubs()},
		&Command{Name: "command", Arity: -1, Flags: FlagNoKeys | FlagLoading | FlagStale, Group: "server", Fn: cmdCommandAll, Subs: map[string]*Command{
			"count":   {Arity: 2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: func(c *Ctx) { c.W.WriteInt(int64(len(c.Eng.cmdList))) }},
			"info":    {Arity: -2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: cmdCommandInfo},
			"docs":    {Arity: -2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: cmdCommandDocs},
			"list":    {Arity: -2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: cmdCommandList},
			"getkeys": {Arity: -4, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: func(c *Ctx) { getKeysGeneric(c, false) }},
			"getkeysandflags": {Arity: -4, Flags: FlagNoKeys | FlagLoading | FlagStale,
				Fn: func(c *Ctx) { getKeysGeneric(c, true) }},
			"help": HelpCommand(FlagNoKeys, commandHelp),
		}},
	)
}

// PING [message]
func cmdPing(c *Ctx) {
	if len(c.Args) > 2 {
		c.W.WriteError(ErrWrongArgs("ping"))
		return
	}
	if pingSubscribed(c) { // RESP2 subscribed mode replies ["pong", msg] (pubsub.go)
		return
	}
	if len(c.Args) == 2 {
		c.W.WriteBulk(c.Args[1])
		return
	}
	c.W.WriteStatus("PONG")
}

// TIME
func cmdTime(c *Ctx) {
	now := c.Eng.clock.Wall()
	c.W.WriteArray(2)
	c.W.WriteBulkString(strconv.FormatInt(now.Unix(), 10))
	c.W.WriteBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// clusterSubs lists Redis 7's CLUSTER subcommands: every known one answers
// that cluster support is disabled (clients such as rueidis and
// StackExchange.Redis then settle on standalone mode); unknown ones get the
// usual unknown-subcommand error.
func clusterSubs() map[string]*Command {
	subs := map[string]*Command{}
	// Arities from Redis 7.2's command table: a wrong count gets the arity
	// error before the cluster one, as in Redis.
	for name, arity := range map[string]int{
		"addslots": -3, "addslotsrange": -4, "bumpepoch": 2, "count-failure-reports": 3,
		"countkeysinslot": 3, "delslots": -3, "delslotsrange": -4, "failover": -2, "flushslots": 2,
		"forget": 3, "getkeysinslot": 4, "help": 2, "info": 2, "keyslot": 3, "links": 2, "meet": -4,
		"myid": 2, "myshardid": 2, "nodes": 2, "replicas": 3, "replicate": 3, "reset": -2,
		"saveconfig": 2, "set-config-epoch": 3, "setslot": -4, "shards": 2, "slaves": 3, "slots": 2,
	} {
		subs[name] = &Command{Arity: arity, Flags: FlagNoKeys | FlagStale, Fn: func(c *Ctx) { c.W.WriteError(ErrClusterDisabled) }}
	}
	// Flags as Redis 7.0's: admin ones, those refused while loading
	// asynchronously, the one scripts may not call.
	for _, name := range []string{"addslots", "addslotsrange", "bumpepoch", "count-failure-reports",
		"delslots", "delslotsrange", "failover", "flushslots", "forget", "meet", "replicas",
		"replicate", "reset", "saveconfig", "set-config-epoch", "setslot", "slaves"} {
		subs[name].Flags |= FlagAdmin
	}
	for _, name := range []string{"addslots", "addslotsrange", "bumpepoch", "delslots", "delslotsrange",
		"failover", "flushslots", "forget", "meet", "replicate", "saveconfig", "set-config-epoch", "setslot"} {
		subs[name].Flags |= FlagNoAsyncLoading
	}
	subs["reset"].Flags |= FlagNoScript
	subs["help"].Flags |= FlagLoading
	return subs
}

// ---- INFO ----

// ServerInfo is what INFO needs from the server.
type ServerInfo struct {
	Port             int
	ConfigFile       string
	ConnectedClients int
	MaxClients       int
	// Pub/sub and client tracking (server/pubsub.go).
	TrackingClients int
	PubSubChannels  int
	PubSubPatterns  int
	PubSubShards    int // shard channels with subscribers
	// The tracking table: keys clients may cache, (key, client) pairs,
	// and BCAST prefixes.
	TrackingKeys, TrackingItems, TrackingPrefixes int
	// PausedClients counts the clients whose command CLIENT PAUSE holds:
	// blocked_clients counts them, as Redis counts its postponed clients.
	PausedClients int
	// Hz and ConfiguredHz are INFO's hz (with dynamic-hz, raised with the
	// number of clients) and configured_hz (the hz setting); 0 is 10.
	Hz, ConfiguredHz int
	// Multiplexing is INFO's multiplexing_api ("" is "goroutines").
	Multiplexing string
	// RecentMaxInput and RecentMaxOutput are the largest input and
	// output buffers a client had in the last seconds
	// (client_recent_max_input_buffer, client_recent_max_output_buffer).
	RecentMaxInput, RecentMaxOutput int64
}

// ScriptCounter is implemented by a Scripter that can tell how many
// scripts it holds and their size (INFO memory's number_of_cached_scripts
// and used_memory_scripts_eval).
type ScriptCounter interface {
	CachedScripts() int
	CachedScriptBytes() int
}

// InfoProvider supplies the server's part of INFO.
type InfoProvider interface {
	ServerInfo() ServerInfo
}

// ClientMemoryReporter is implemented by an InfoProvider that can tell
// what its connections use (INFO's mem_clients_normal): asked only when
// INFO shows the memory section.
type ClientMemoryReporter interface {
	ClientsMemory() int64
}

var infoDefault = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}

// INFO [section [section ...]]
func cmdInfo(c *Ctx) {
	want := map[string]bool{}
	if len(c.Args) == 1 {
		for _, s := range infoDefault {
			want[s] = true
		}
	}
	for _, a := range c.Args[1:] {
		s := lowerC(a) // sdsnew(argv[i]->ptr): up to a NUL
		switch s {
		case "all", "everything", "default":
			for _, d := range infoDefault {
				want[d] = true
			}
			if s != "default" {
				want["commandstats"] = true
				want["latencystats"] = true
			}
		default:
			want[s] = true
		}
	}
	c.W.WriteVerbatim("txt", c.Eng.infoString(want))
}

func (e *Engine) infoString(want map[string]bool) string {
	var si ServerInfo
	if e.info != nil {
		si = e.info.ServerInfo()
	}
	var b strings.Builder
	sections := 0
	section := func(name, title string, fields func(add func(k, v string))) {
		if !want[name] {
			return
		}
		if sections > 0 {
			b.WriteString("\r\n")
		}
		sections++
		b.WriteString("# " + title + "\r\n")
		fields(func(k, v string) { b.WriteString(k + ":" + v + "\r\n") })
	}
	// the server's clock: a fixture's manual clock moves them (Advance)
	now, mono := e.clock.Wall(), e.clock.Mono()
	born := e.birth.Load()
	uptime := (mono - born.mono) / 1000
	exe, _ := os.Executable()
	section("server", "Server", func(add func(k, v string)) {
		add("redis_version", Version)
		add("redis_git_sha1", "00000000")
		add("redis_git_dirty", "0")
		add("redis_build_id", "0")
		add("redis_mode", "standalone")
		add("os", osName())
		add("arch_bits", "64")
		add("monotonic_clock", "Go runtime monotonic clock")
		add("multiplexing_api", cmp.Or(si.Multiplexing, "goroutines"))
		add("go_version", runtime.Version())
		add("process_id", strconv.Itoa(os.Getpid()))
		add("process_supervised", "no")
		add("run_id", born.runID)
		add("tcp_port", strconv.Itoa(si.Port))
		add("server_time_usec", strconv.FormatInt(now.UnixMicro(), 10))
		add("uptime_in_seconds", strconv.FormatInt(uptime, 10))
		add("uptime_in_days", strconv.FormatInt(uptime/86400, 10))
		add("hz", strconv.Itoa(cmp.Or(si.Hz, 10)))
		add("configured_hz", strconv.Itoa(cmp.Or(si.ConfiguredHz, 10)))
		// Redis's LRU clock: seconds, in 24 bits (LRU_CLOCK)
		add("lru_clock", strconv.FormatUint(lruNow(mono), 10)) // OBJECT IDLETIME's clock
		add("executable", exe)
		add("config_file", si.ConfigFile)
		add("io_threads_active", "0")
		add("tumbler_version", BuildVersion())
	})
	section("clients", "Clients", func(add func(k, v string)) {
		add("connected_clients", strconv.Itoa(si.ConnectedClients))
		add("cluster_connections", "0")
		add("maxclients", strconv.Itoa(si.MaxClients))
		add("client_recent_max_input_buffer", strconv.FormatInt(si.RecentMaxInput, 10))
		add("client_recent_max_output_buffer", strconv.FormatInt(si.RecentMaxOutput, 10))
		blocked, timed := e.blockedClients() // blocking.go
		add("blocked_clients", strconv.Itoa(blocked+si.PausedClients))
		add("tracking_clients", strconv.Itoa(si.TrackingClients))
		add("clients_in_timeout_table", strconv.Itoa(timed))
	})
	section("memory", "Memory", func(add func(k, v string)) { e.infoMemory(add) })
	section("persistence", "Persistence", func(add func(k, v string)) {
		// no persistence: the values Redis shows with saving, AOF and
		// fork-based work unused
		add("loading", "0")
		add("async_loading", "0")
		add("current_cow_peak", "0")
		add("current_cow_size", "0")
		add("current_cow_size_age", "0")
		add("current_fork_perc", "0.00")
		add("current_save_keys_processed", "0")
		add("current_save_keys_total", "0")
		add("rdb_changes_since_last_save", strconv.FormatInt(e.dirty, 10)) // INFO runs under the keyspace lock
		add("rdb_bgsave_in_progress", "0")
		add("rdb_last_save_time", strconv.FormatInt(born.start.Unix(), 10))
		add("rdb_last_bgsave_status", "ok")
		add("rdb_last_bgsave_time_sec", "-1")
		add("rdb_current_bgsave_time_sec", "-1")
		add("rdb_saves", "0")
		add("rdb_last_cow_size", "0")
		add("rdb_last_load_keys_expired", "0")
		add("rdb_last_load_keys_loaded", "0")
		add("aof_enabled", "0")
		add("aof_rewrite_in_progress", "0")
		add("aof_rewrite_scheduled", "0")
		add("aof_last_rewrite_time_sec", "-1")
		add("aof_current_rewrite_time_sec", "-1")
		add("aof_last_bgrewrite_status", "ok")
		add("aof_rewrites", "0")
		add("aof_rewrites_consecutive_failures", "0")
		add("aof_last_write_status", "ok")
		add("aof_last_cow_size", "0")
		add("module_fork_in_progress", "0")
		add("module_fork_last_cow_size", "0")
	})
	section("stats", "Stats", func(add func(k, v string)) {
		i64 := func(k string, v int64) { add(k, strconv.FormatInt(v, 10)) }
		netIn, netOut, reads, writes := e.Net.Totals()
		kin, kout := e.NetKbps()
		i64("total_connections_received", e.Stats.ConnsReceived.Load())
		i64("total_commands_processed", e.Stats.Commands.Load())
		i64("instantaneous_ops_per_sec", e.OpsPerSec())
		i64("total_net_input_bytes", netIn)
		i64("total_net_output_bytes", netOut)
		add("total_net_repl_input_bytes", "0") // no replication
		add("total_net_repl_output_bytes", "0")
		add("instantaneous_input_kbps", strconv.FormatFloat(kin, 'f', 2, 64))
		add("instantaneous_output_kbps", strconv.FormatFloat(kout, 'f', 2, 64))
		add("instantaneous_input_repl_kbps", "0.00")
		add("instantaneous_output_repl_kbps", "0.00")
		i64("rejected_connections", e.Stats.RejectedConns.Load())
		add("sync_full", "0")
		add("sync_partial_ok", "0")
		add("sync_partial_err", "0")
		i64("expired_keys", e.Stats.ExpiredKeys.Load())
		add("expired_stale_perc", strconv.FormatFloat(e.expiredStalePerc(), 'f', 2, 64))
		i64("expired_time_cap_reached_count", e.Stats.ExpireTimeCap.Load())
		i64("expire_cycle_cpu_milliseconds", e.obs.expireNs.Load()/int64(time.Millisecond))
		// never evicts keys (maxmemory-policy is always noeviction)
		add("evicted_keys", "0")
		i64("evicted_clients", e.Stats.EvictedClients.Load())
		add("total_eviction_exceeded_time", "0")
		add("current_eviction_exceeded_time", "0")
		i64("keyspace_hits", e.Stats.KeyspaceHits.Load())
		i64("keyspace_misses", e.Stats.KeyspaceMisses.Load())
		add("pubsub_channels", strconv.Itoa(si.PubSubChannels))
		add("pubsub_patterns", strconv.Itoa(si.PubSubPatterns))
		add("pubsubshard_channels", strconv.Itoa(si.PubSubShards))
		add("latest_fork_usec", "0") // never forks
		add("total_forks", "0")
		add("migrate_cached_sockets", strconv.Itoa(e.migrate.cached()))
		add("slave_expires_tracked_keys", "0")
		for _, k := range []string{"active_defrag_hits", "active_defrag_misses", "active_defrag_key_hits", "active_defrag_key_misses", "total_active_defrag_time", "current_active_defrag_time"} {
			add(k, "0") // no defragmentation: Go's allocator is not jemalloc
		}
		add("tracking_total_keys", strconv.Itoa(si.TrackingKeys))
		add("tracking_total_items", strconv.Itoa(si.TrackingItems))
		add("tracking_total_prefixes", strconv.Itoa(si.TrackingPrefixes))
		i64("total_eval_calls", e.Stats.ScriptRuns.Load())
		// Redis counts error replies from a master or in an AOF here;
		// tumbler has neither, so none are ever unexpected.
		add("unexpected_error_replies", "0")
		errs, _ := e.ErrorReplies()
		i64("total_error_replies", errs)
		add("dump_payload_sanitizations", "0") // RESTORE always checks payloads whole; Redis counts only under sanitize-dump-payload yes
		i64("total_reads_processed", reads)
		i64("total_writes_processed", writes)
		add("io_threaded_reads_processed", "0") // no I/O threads: event loops read their own
		add("io_threaded_writes_processed", "0")
	})
	section("replication", "Replication", func(add func(k, v string)) {
		add("role", "master")
		add("connected_slaves", "0")
		if e.noReplicas.Load() {
			add("min_slaves_good_slaves", "0")
		}
		add("master_failover_state", "no-failover")
		add("master_replid", born.replID)
		add("master_replid2", "0000000000000000000000000000000000000000")
		add("master_repl_offset", "0")
		add("second_repl_offset", "-1")
		add("repl_backlog_active", "0")
		add("repl_backlog_size", "1048576") // repl-backlog-size's default, unused
		add("repl_backlog_first_byte_offset", "0")
		add("repl_backlog_histlen", "0")
	})
	section("cpu", "CPU", func(add func(k, v string)) {
		sys, user, csys, cuser := cpuTimes()
		add("used_cpu_sys", strconv.FormatFloat(sys, 'f', 6, 64))
		add("used_cpu_user", strconv.FormatFloat(user, 'f', 6, 64))
		add("used_cpu_sys_children", strconv.FormatFloat(csys, 'f', 6, 64))
		add("used_cpu_user_children", strconv.FormatFloat(cuser, 'f', 6, 64))
	})
	section("modules", "Modules", func(add func(k, v string)) {})
	section("commandstats", "Commandstats", e.infoCommandStats)
	section("errorstats", "Errorstats", e.infoErrorStats)
	section("latencystats", "Latencystats", e.infoLatencyStats)
	section("cluster", "Cluster", func(add func(k, v string)) { add("cluster_enabled", "0") })
	section("keyspace", "Keyspace", func(add func(k, v string)) {
		for i := range e.dbs {
			if d := &e.dbs[i]; d.size() > 0 {
				add("db"+strconv.Itoa(i), "keys="+strconv.Itoa(d.size())+",expires="+strconv.Itoa(d.expires())+",avg_ttl="+strconv.FormatInt(e.avgTTL(d.idx), 10))
			}
		}
	})
	return b.String()
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + "G"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + "M"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 2, 64) + "K"
	}
	return strconv.FormatUint(n, 10) + "B"
}

// ---- COMMAND ----

// COMMAND
func cmdCommandAll(c *Ctx) {
	c.W.WriteArray(len(c.Eng.cmdList))
	for _, cmd := range c.Eng.cmdList {
		writeCommandInfo(c.W, cmd)
	}
}

// COMMAND INFO [command-name ...]
func cmdCommandInfo(c *Ctx) {
	if len(c.Args) == 2 {
		cmdCommandAll(c)
		return
	}
	c.W.WriteArray(len(c.Args) - 2)
	for _, name := range c.Args[2:] {
		cmd := c.Eng.lookupFull(name)
		if cmd == nil {
			c.W.WriteNull() // addReplyNull: $-1 in RESP2
		} else {
			writeCommandInfo(c.W, cmd)
		}
	}
}

// lookupFull finds "name" or "container|sub", ignoring the case of ASCII
// letters only, as Redis's command dict compares names (strcasecmp): a
// name rename-command gave may hold any byte, which strings.ToLower would
// turn into U+FFFD or fold (the Kelvin sign to "k").
func (e *Engine) lookupFull(name []byte) *Command {
	s := LowerASCII(string(name))
	if i := strings.IndexByte(s, '|'); i >= 0 {
		cmd := e.cmds[s[:i]]
		if cmd == nil || cmd.Subs == nil {
			return nil
		}
		return cmd.Subs[s[i+1:]]
	}
	return e.cmds[s]
}

func writeCommandInfo(w Writer, cmd *Command) {
	w.WriteArray(10)
	w.WriteBulkString(cmd.Name)
	w.WriteInt(int64(cmd.Arity))
	var flags []string
	for _, f := range flagNames {
		if cmd.Flags&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	w.WriteSet(len(flags))
	for _, f := range flags {
		w.WriteStatus(f)
	}
	w.WriteInt(int64(cmd.FirstKey))
	w.WriteInt(int64(cmd.LastKey))
	w.WriteInt(int64(cmd.Step))
	cats := cmd.Categories() // Redis 7.0's, from the generated table (acl_spec.go)
	w.WriteSet(len(cats))
	for _, cat := range cats {
		w.WriteStatus(cat)
	}
	w.WriteSet(len(cmd.tips))
	for _, t := range cmd.tips {
		w.WriteBulkString(t)
	}
	writeKeySpecs(w, cmd.keySpecs)
	if cmd.Subs == nil {
		w.WriteSet(0) // as Redis's addReplyCommandSubCommands
		return
	}
	subs := sortedSubs(cmd)
	w.WriteArray(len(subs))
	for _, s := range subs {
		writeCommandInfo(w, s)
	}
}

func sortedSubs(cmd *Command) []*Command {
	var subs []*Command
	for _, s := range cmd.Subs {
		subs = append(subs, s)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

// COMMAND DOCS [command-name ...]
func cmdCommandDocs(c *Ctx) {
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = c.Eng.cmdList
	} else {
		for _, name := range c.Args[2:] {
			if cmd := c.Eng.lookupFull(name); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.WriteMap(len(cmds))
	for _, cmd := range cmds {
		c.W.WriteBulkString(cmd.Name)
		writeCommandDoc(c.W, cmd)
	}
}

// COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]
//
// As Redis, it lists subcommands ("client|list") after their container,
// and takes FILTERBY only as its last three arguments.
func cmdCommandList(c *Ctx) {
	var keep func(cmd *Command) bool
	switch {
	case len(c.Args) == 2:
	case len(c.Args) == 5 && EqFold(c.Args[2], "filterby"):
		arg := c.Args[4]
		switch {
		case EqFold(c.Args[3], "module"):
			keep = func(*Command) bool { return false } // no modules
		case EqFold(c.Args[3], "aclcat"):
			cat := aclCategoryByName(string(arg))
			keep = func(cmd *Command) bool { return cmd.aclCats&cat != 0 }
		case EqFold(c.Args[3], "pattern"):
			keep = func(cmd *Command) bool { return Match(arg, []byte(cmd.Name), true) }
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	default:
		c.W.WriteError(ErrSyntax)
		return
	}
	var names []string
	var add func(cmd *Command)
	add = func(cmd *Command) {
		if keep == nil || keep(cmd) {
			names = append(names, cmd.Name)
		}
		for _, sub := range sortedSubs(cmd) {
			add(sub)
		}
	}
	for _, cmd := range c.Eng.cmdList {
		add(cmd)
	}
	c.W.WriteArray(len(names))
	for _, name := range names {
		c.W.WriteBulkString(name)
	}
}

// COMMAND GETKEYS command [arg ...]
//
// As Redis 7.0's getKeysSubcommandImpl: the key arguments of a command
// line, found as the command finds them (its Keys function, or its key
// range), in the order they appear.
// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg ...]: the keys, and with
// flags each key's access flags as its key specification (or, where the
// flags vary with the arguments, the command's own rule) gives them, the
// ones ACL checks use (acl.go).
func getKeysGeneric(c *Ctx, withFlags bool) {
	args := c.Args[2:]
	cmd := c.Eng.Lookup(args[0])
	if cmd != nil && cmd.Subs != nil && len(args) > 1 {
		cmd = lookupSub(cmd, args[1])
	}
	switch {
	case cmd == nil:
		c.W.WriteError("ERR Invalid command specified")
		return
	case (cmd.Keys == nil && cmd.FirstKey <= 0) || cmd.Flags&FlagPubSub != 0:
		// (SPUBLISH's and SSUBSCRIBE's range is shard channels, which
		// Redis's key specs mark as no keys)
		c.W.WriteError("ERR The command has no key arguments")
		return
	case (cmd.Arity > 0 && cmd.Arity != len(args)) || len(args) < -cmd.Arity:
		c.W.WriteError("ERR Invalid number of arguments specified for command")
		return
	}
	pos := commandKeyPositions(cmd, args)
	if len(pos) == 0 && cmd.Flags&FlagNoMandatoryKeys == 0 {
		c.W.WriteError("ERR Invalid arguments specified for command")
		return
	}
	c.W.WriteArray(len(pos))
	var refs []keyRef
	if withFlags {
		refs = aclKeys(cmd, args, nil)
	}
	for _, i := range pos {
		if !withFlags {
			c.W.WriteBulk(args[i])
			continue
		}
		flags := ksRw | ksAccess | ksUpdate // (no key spec found it: every access)
		for _, r := range refs {
			if r.pos == i {
				flags = r.flags
				break
			}
		}
		c.W.WriteArray(2)
		c.W.WriteBulk(args[i])
		writeKeyFlags(c.W, flags)
	}
}

// writeKeySpecs replies key specifications as COMMAND INFO shows them
// (Redis's addReplyCommandKeySpecs).
func writeKeySpecs(w Writer, specs []keySpec) {
	w.WriteSet(len(specs))
	for i := range specs {
		sp := &specs[i]
		n := 3
		if sp.notes != "" {
			n++
		}
		w.WriteMap(n)
		if sp.notes != "" {
			w.WriteBulkString("notes")
			w.WriteBulkString(sp.notes)
		}
		w.WriteBulkString("flags")
		writeKeyFlags(w, sp.flags)
		w.WriteBulkString("begin_search")
		w.WriteMap(2)
		w.WriteBulkString("type")
		switch sp.bs {
		case bsIndex:
			w.WriteBulkString("index")
			w.WriteBulkString("spec")
			w.WriteMap(1)
			w.WriteBulkString("index")
			w.WriteInt(int64(sp.index))
		case bsKeyword:
			w.WriteBulkString("keyword")
			w.WriteBulkString("spec")
			w.WriteMap(2)
			w.WriteBulkString("keyword")
			w.WriteBulkString(sp.keyword)
			w.WriteBulkString("startfrom")
			w.WriteInt(int64(sp.startFrom))
		default:
			w.WriteBulkString("unknown")
			w.WriteBulkString("spec")
			w.WriteMap(0)
		}
		w.WriteBulkString("find_keys")
		w.WriteMap(2)
		w.WriteBulkString("type")
		switch sp.fk {
		case fkRange:
			w.WriteBulkString("range")
			w.WriteBulkString("spec")
			w.WriteMap(3)
			w.WriteBulkString("lastkey")
			w.WriteInt(int64(sp.lastKey))
			w.WriteBulkString("keystep")
			w.WriteInt(int64(sp.keyStep))
			w.WriteBulkString("limit")
			w.WriteInt(int64(sp.limit))
		case fkKeynum:
			w.WriteBulkString("keynum")
			w.WriteBulkString("spec")
			w.WriteMap(3)
			w.WriteBulkString("keynumidx")
			w.WriteInt(int64(sp.keynumIdx))
			w.WriteBulkString("firstkey")
			w.WriteInt(int64(sp.firstKey))
			w.WriteBulkString("keystep")
			w.WriteInt(int64(sp.keyStep))
		default:
			w.WriteBulkString("unknown")
			w.WriteBulkString("spec")
			w.WriteMap(0)
		}
	}
}

// keyFlagNames name the key specification flags in Redis's order
// (addReplyFlagsForKeyArgs).
var keyFlagNames = []struct {
	f    keyFlag
	name string
}{
	{ksRo, "RO"}, {ksRw, "RW"}, {ksOw, "OW"}, {ksRm, "RM"}, {ksAccess, "access"}, {ksUpdate, "update"},
	{ksInsert, "insert"}, {ksDelete, "delete"}, {ksNotKey, "not_key"}, {ksIncomplete, "incomplete"},
	{ksVariableFlags, "variable_flags"},
}

// writeKeyFlags replies key specification flags as a set of statuses.
func writeKeyFlags(w Writer, f keyFlag) {
	n := 0
	for _, k := range keyFlagNames {
		if f&k.f != 0 {
			n++
		}
	}
	w.WriteSet(n)
	for _, k := range keyFlagNames {
		if f&k.f != 0 {
			w.WriteStatus(k.name)
		}
	}
}

// commandKeyPositions returns the positions of args's keys in ascending
// order; none when the key range falls outside args (a syntax error to
// the command).
func commandKeyPositions(cmd *Command, args [][]byte) []int {
	if cmd.Keys != nil {
		pos := cmd.Keys(args)
		slices.Sort(pos)
		return pos
	}
	first, last := cmd.FirstKey, cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	if first >= len(args) || last >= len(args) || last < first {
		return nil
	}
	var pos []int
	for i := first; i <= last; i += max(cmd.Step, 1) {
		pos = append(pos, i)
	}
	return pos
}
