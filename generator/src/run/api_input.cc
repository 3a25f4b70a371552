#include "run/api_input.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <map>
#include <set>
#include <thread>

#include <rapidjson/document.h>

#include "kind_table.h"
#include "resolve/features.h"

namespace g2n {

std::unique_ptr<ApiInput> ApiInput::start(const Args &args, const volatile sig_atomic_t &stop, Log log)
{
    kube::ApiServer server = args.in_cluster ? kube::in_cluster() : kube::load_kubeconfig(args.kubeconfig);
    server.user_agent = "gateway2nginx/" + kube::replica_identity();
    log("reading the API server of " + server.origin);
    std::unique_ptr<ApiInput> input(new ApiInput());
    for (std::chrono::milliseconds backoff(800); !stop;) {
        try {
            kube::ApiClient client(server);
            std::vector<std::string> notes;
            input->kinds_ = kube::discover_kinds(client, &notes);
            for (const std::string &note : notes) log(note);
            break;
        } catch (const kube::ApiError &e) {
            log(std::string(e.what()) + "; again in " + std::to_string(backoff.count()) + " ms");
            std::this_thread::sleep_for(backoff);
            backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(30));
        }
    }
    if (stop) return nullptr;
    // a ConfigMap or Secret nothing refers to is held as a digest (want())
    for (const kube::ApiKind &k : input->kinds_) {
        if (find_kind(k.group, k.kind)->fetched_when_referred()) input->objects_.hold_wanted_only(k);
    }
    input->server_ = server;
    input->log_ = log;
    // with --watch-namespace, the namespaces named, and the Service whose
    // load balancer gives Gateways their addresses wherever it is
    std::vector<std::pair<std::string, std::string>> also;
    const std::string &front = args.options.status_address_service;
    if (!front.empty()) also.emplace_back("Service", front.substr(0, front.find('/')));
    if (!args.watch_namespaces.empty()) {
        std::string names;
        for (const std::string &n : args.watch_namespaces) names += (names.empty() ? "" : ", ") + n;
        log("watching the namespaced kinds in " + names + " only");
    }
    input->reflectors_ = std::make_unique<kube::Reflectors>(
        server, kube::scoped_kinds(input->kinds_, args.watch_namespaces, also), &input->objects_, log);
    kube::LeaseConfig lease;
    lease.namespace_ = !args.lease_namespace.empty() ? args.lease_namespace : kube::pod_namespace(args.in_cluster);
    lease.name = args.lease_name;
    lease.identity = kube::replica_identity();
    lease.duration = std::chrono::milliseconds(args.lease_duration_ms);
    lease.renew_deadline = std::chrono::milliseconds(args.renew_deadline_ms);
    lease.retry_period = std::chrono::milliseconds(args.retry_period_ms);
    input->elector_ = std::make_unique<kube::LeaderElector>(server, lease, log);
    kube::LeaderElector *elector = input->elector_.get();
    input->writer_ = std::make_unique<kube::StatusWriter>(server, &input->objects_, args.options.controller_name,
                                                          [elector] { return elector->is_leader(); }, log,
                                                          args.kube_api_qps, args.kube_api_burst);
    if (!args.gateway_service_external_name.empty()) {
        auto services = std::find_if(input->kinds_.begin(), input->kinds_.end(),
                                     [](const kube::ApiKind &k) { return k.group.empty() && k.kind == "Service"; });
        input->gateway_services_ = std::make_unique<kube::GatewayServiceWriter>(
            server, &input->objects_, *services,
            kube::GatewayServiceConfig{args.gateway_service_external_name, args.options.controller_name},
            [elector] { return elector->is_leader(); }, log);
    }
    return input;
}

Input::Readable ApiInput::on_readable()
{
    objects_.drain_changes();
    return Readable::Changed;
}

bool ApiInput::synced()
{
    if (synced_) return true;
    synced_ = reflectors_->synced();
    if (synced_) {
        log_("every kind listed: " + std::to_string(objects_.size()) + " object(s)");
    } else if (std::chrono::steady_clock::now() > say_waiting_) {
        log_("waiting for the first list of " + reflectors_->unsynced());
        say_waiting_ = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    return synced_;
}

std::optional<ChangeSet> ApiInput::take_changes()
{
    return ChangeSet{objects_.take_changes(), [this](const kube::ObjectChange &c) { return objects_.json_of(c); }};
}

void ApiInput::read(Manifests *out, unsigned jobs, DocumentCache *cache)
{
    parse_texts(objects_.texts(), out, jobs, cache);
    out->server_timestamps = true;
}

bool ApiInput::want(const ResolveReads &reads)
{
    // read_key() "Kind namespace/name" -> the store's key, with what a get needs
    struct Wanted {
        const kube::ApiKind *kind;
        std::string namespace_, name;
    };
    std::map<std::string, Wanted> wanted;
    for (const auto &read : reads.readers) {
        const std::string &key = read.first;
        const size_t space = key.find(' '), slash = key.find('/', space);
        if (slash == std::string::npos) continue;
        auto kind = std::find_if(kinds_.begin(), kinds_.end(), [&](const kube::ApiKind &k) {
            return k.group.empty() && key.compare(0, space, k.kind) == 0 && k.kind.size() == space;
        });
        if (kind == kinds_.end()) continue;
        wanted.emplace(kube::ObjectStore::key_of(*kind, key.substr(space + 1)),
                       Wanted{&*kind, key.substr(space + 1, slash - space - 1), key.substr(slash + 1)});
    }
    std::set<std::string> keys;
    for (const auto &[key, w] : wanted) keys.insert(key);
    bool fetched = false;
    for (const std::string &key : objects_.want(std::move(keys))) {
        const Wanted &w = wanted.at(key);
        const std::string name_key = w.namespace_ + "/" + w.name;
        if (!client_) client_ = std::make_unique<kube::ApiClient>(server_);
        const kube::Response r = client_->request("GET", w.kind->object_path(w.namespace_, w.name));
        fetches_++;
        if (r.status == 404) continue;  // gone: its watch event erases it
        rapidjson::Document doc;
        doc.Parse(r.body.c_str(), r.body.size());
        std::string got_key, text, content;
        if (!r.ok() || doc.HasParseError()
            || !kube::object_text(doc, *w.kind, doc.GetAllocator(), &got_key, &text, &content) || got_key != name_key) {
            log_("fetching " + w.kind->kind + " " + name_key + " failed (" + (r.ok() ? "not the object" : r.describe())
                 + "); it is read as missing until it changes or is wanted again");
            continue;
        }
        fetched = objects_.fill(*w.kind, name_key, std::move(text), std::move(content)) || fetched;
    }
    return fetched;
}

namespace {

// A plan's statuses as the writer takes them, shared with the plan (its
// statuses and the texts they view), each object's JSON built when asked.
class PlanStatuses : public kube::StatusOffer {
public:
    PlanStatuses(const Plan &plan, const std::vector<kube::ApiKind> &kinds, const Options &options, bool nginx_runs,
                 bool gateway_services)
        : statuses_(plan.statuses), texts_(plan.texts), kinds_(kinds), controller_name_(options.controller_name),
          features_(supported_features(gateway_services)), nginx_runs_(nginx_runs)
    {
    }

    size_t size() const override { return statuses_->size(); }

    Object object(size_t i) const override
    {
        const ObjectStatus &st = (*statuses_)[i];
        auto kind = std::find_if(kinds_.begin(), kinds_.end(), [&](const kube::ApiKind &k) {
            return k.kind == st.kind && k.group == "gateway.networking.k8s.io";
        });
        return Object{kind == kinds_.end() ? nullptr : &*kind, st.meta.namespace_, st.meta.name, st.meta.uid};
    }

    // A Gateway (a ListenerSet) is not Programmed before a running nginx serves it
    std::string ours(size_t i) const override
    {
        const ObjectStatus &st = (*statuses_)[i];
        if (nginx_runs_ || (st.kind != "Gateway" && st.kind != "ListenerSet")) {
            return kube::our_status_json(st, controller_name_, features_);
        }
        ObjectStatus pending = st;
        for (Condition &c : pending.conditions) {
            if (c.type == "Programmed" && c.status == "True") {
                c = Condition{"Programmed", "False", "Pending", "nginx does not run this configuration yet"};
            }
        }
        return kube::our_status_json(pending, controller_name_, features_);
    }

private:
    std::shared_ptr<const StatusList> statuses_;
    std::shared_ptr<TextTable> texts_;  // what statuses_ view
    const std::vector<kube::ApiKind> &kinds_;  // ApiInput's, which outlive its writer
    std::string controller_name_;
    std::vector<std::string_view> features_;
    bool nginx_runs_;
};

}  // namespace

void ApiInput::offer_status(const Plan &plan, const Options &options, bool nginx_runs,
                            const std::vector<int64_t> *from)
{
    // (a Gateway's Programmed follows nginx_runs: every status may differ)
    if (offered_runs_ != nginx_runs) from = nullptr;
    offered_runs_ = nginx_runs;
    writer_->offer(std::make_shared<PlanStatuses>(plan, kinds_, options, nginx_runs, gateway_services_ != nullptr),
                   from);
    if (gateway_services_) gateway_services_->offer(plan.gateway_services);
}

std::string ApiInput::metrics() const
{
    std::ostringstream out;
    const auto [held, whole] = objects_.held();
    out << "# HELP gateway2nginx_objects_held Objects held from the API server, and those of them held whole "
           "(the others: ConfigMaps and Secrets nothing refers to, as a digest).\n"
           "# TYPE gateway2nginx_objects_held gauge\n"
        << "gateway2nginx_objects_held " << held << "\ngateway2nginx_objects_held_whole " << whole << "\n"
        << "# HELP gateway2nginx_object_fetches_total ConfigMaps and Secrets fetched once something referred to them.\n"
           "# TYPE gateway2nginx_object_fetches_total counter\ngateway2nginx_object_fetches_total "
        << fetches_ << "\n";
    out << "# HELP gateway2nginx_watch_events_total Watch events received, by kind.\n"
           "# TYPE gateway2nginx_watch_events_total counter\n";
    for (const auto &c : reflectors_->counts()) {
        out << "gateway2nginx_watch_events_total{kind=\"" << c.kind << "\"} " << c.events << "\n";
    }
    out << "# HELP gateway2nginx_lists_total Full lists, by kind (the first, and after 410 Gone).\n"
           "# TYPE gateway2nginx_lists_total counter\n";
    for (const auto &c : reflectors_->counts()) out << "gateway2nginx_lists_total{kind=\"" << c.kind << "\"} " << c.lists << "\n";
    out << "# HELP gateway2nginx_api_errors_total Failed lists and watches, by kind.\n"
           "# TYPE gateway2nginx_api_errors_total counter\n";
    for (const auto &c : reflectors_->counts()) out << "gateway2nginx_api_errors_total{kind=\"" << c.kind << "\"} " << c.errors << "\n";
    const kube::StatusWriter::Counts w = writer_->counts();
    out << "# HELP gateway2nginx_status_writes_total Status writes, by result.\n"
           "# TYPE gateway2nginx_status_writes_total counter\n"
        << "gateway2nginx_status_writes_total{result=\"written\"} " << w.written << "\n"
        << "gateway2nginx_status_writes_total{result=\"unchanged\"} " << w.unchanged << "\n"
        << "gateway2nginx_status_writes_total{result=\"conflict\"} " << w.conflicts << "\n"
        << "gateway2nginx_status_writes_total{result=\"failed\"} " << w.failed << "\n"
        << "# HELP gateway2nginx_status_queued Statuses still to be compared with the API's, and written where they differ.\n"
           "# TYPE gateway2nginx_status_queued gauge\n"
        << "gateway2nginx_status_queued " << w.queued << "\n"
        << "# HELP gateway2nginx_status_offered Statuses of the configuration applied last, whose status is written.\n"
           "# TYPE gateway2nginx_status_offered gauge\n"
        << "gateway2nginx_status_offered " << w.offered << "\n";
    if (gateway_services_) {
        const kube::GatewayServiceWriter::Counts g = gateway_services_->counts();
        out << "# HELP gateway2nginx_gateway_service_writes_total Writes of Gateways' own Services, by result.\n"
               "# TYPE gateway2nginx_gateway_service_writes_total counter\n"
            << "gateway2nginx_gateway_service_writes_total{result=\"created\"} " << g.created << "\n"
            << "gateway2nginx_gateway_service_writes_total{result=\"updated\"} " << g.updated << "\n"
            << "gateway2nginx_gateway_service_writes_total{result=\"deleted\"} " << g.deleted << "\n"
            << "gateway2nginx_gateway_service_writes_total{result=\"failed\"} " << g.failed << "\n";
    }
    out << "# HELP gateway2nginx_leader Whether this replica holds the Lease and writes status.\n"
           "# TYPE gateway2nginx_leader gauge\ngateway2nginx_leader "
        << (elector_->is_leader() ? 1 : 0) << "\n";
    return out.str();
}

}  // namespace g2n
