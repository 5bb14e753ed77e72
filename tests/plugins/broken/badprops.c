/* Broken: properties outside what the ABI allows (maxRecvs 9, speed 0). */
#include "refnet.h"

static ncclResult_t props_bad(int dev, ncclNetProperties_v11_t* props) {
  ncclResult_t r = refnet_getProperties(dev, props);
  if (r == ncclSuccess) {
    props->maxRecvs = 9;
    props->speed = 0;
  }
  return r;
}

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-badprops", .getProperties = props_bad)
