// kube: what talks to the Kubernetes API server. Where it is and who we
// are (config.h), requests over HTTPS (client.h, libcurl), and the list
// and watch of every kind the generator reads, kept as client-go's
// reflectors keep them (reflector.h, RapidJSON); what is written back to
// /status (status.h, pure; status_writer.h) and by which replica
// (leader.h, a Lease); each Gateway's own Service (gateway_services.h,
// pure; gateway_service_writer.h).
// May not: look into what objects mean; they go to parse/ as any input.
#pragma once

#include "kube/client.h"
#include "kube/config.h"
#include "kube/gateway_service_writer.h"
#include "kube/gateway_services.h"
#include "kube/leader.h"
#include "kube/reflector.h"
#include "kube/status.h"
#include "kube/status_writer.h"
