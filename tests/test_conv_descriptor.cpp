// The benchdnn-style descriptor parser: the dimension rules of benchdnn's
// 1-D, 2-D and 3-D forms, anvil's h-twin shorthand, and clear errors.
#include <doctest/doctest.h>

#include <string>

#include "conv/conv_descriptor.h"

using anvil::conv::conv_shape;

namespace {

conv_shape parse_ok(const char *text) {
    conv_shape s;
    std::string err;
    const bool ok = anvil::conv::parse_conv_descriptor(text, &s, &err);
    INFO(text, ": ", err);
    REQUIRE(ok);
    return s;
}

std::string parse_error(const char *text) {
    conv_shape s;
    std::string err;
    CHECK_FALSE(anvil::conv::parse_conv_descriptor(text, &s, &err));
    return err;
}

}  // namespace

TEST_CASE("conv descriptor: w fields alone are a 1-D convolution of height 1") {
    const conv_shape s = parse_ok("ic17oc17_iw8ow4kw3pw1sw2_n\"1d\"");
    CHECK(s.ih == 1);
    CHECK(s.oh == 1);
    CHECK(s.kh == 1);
    CHECK(s.sh == 1);
    CHECK(s.pt + s.pb == 0);
    CHECK(s.iw == 8);
    CHECK(s.ow == 4);
    CHECK(s.kw == 3);
    CHECK(s.sw == 2);
    CHECK(s.pl == 1);
    CHECK(s.pr == 0);  // (4 - 1) * 2 - 8 + 3 - 1 = 0
    CHECK(s.name == "1d");
}

TEST_CASE("conv descriptor: a complete w set keeps benchdnn's defaults, not the h values") {
    // benchdnn: sw defaults to 1 and pw to what makes ow come out, even when
    // sh and ph are given (dw_regression:conv9 of oneDNN's lists).
    const conv_shape s = parse_ok("mb1_g16ic16oc16_ih15oh7kh6sh2ph3_iw10ow10kw3");
    CHECK(s.sh == 2);
    CHECK(s.sw == 1);
    CHECK(s.pt == 3);
    CHECK(s.pl == 1);
    CHECK(s.pr == 1);
    // A padding the output size needs below zero only leaves rows unread.
    const conv_shape t = parse_ok("mb1_ic16oc16_ih10oh10kh3_iw15ow8kw1sw2pw0");
    CHECK(t.pr == 0);
    CHECK(t.pt == 1);
}

TEST_CASE("conv descriptor: anvil's shorthand copies missing w fields from h") {
    const conv_shape s = parse_ok("mb2g32ic32ih7iw9oc32kh3sh2ph1");
    CHECK(s.iw == 9);
    CHECK(s.kw == 3);
    CHECK(s.sw == 2);
    CHECK(s.pl == 1);
    CHECK(s.ow == 5);
    const conv_shape t = parse_ok("mb1ic15ih15oc33kh3ph3dh2");
    CHECK(t.iw == 15);
    CHECK(t.dw == 2);
    CHECK(t.ow == 15);
}

TEST_CASE("conv descriptor: 3-D forms with one flat dimension are 2-D problems") {
    // Depth 1 (oneDNN's dilated 2-D lists).
    const conv_shape a = parse_ok(
        "mb1_ic16oc16_kd1kh11kw1_id1ih33iw1_od1oh1ow1_sd1sh3sw1_pd0ph5pw0_dd0dh3dw0");
    CHECK(a.ih == 33);
    CHECK(a.kh == 11);
    CHECK(a.dh == 3);
    CHECK(a.pt == 5);
    CHECK(a.pb == 3);
    CHECK(a.iw == 1);
    // Height and width 1: depth becomes the height.
    const conv_shape b = parse_ok("ic65oc65_id5od5kd3pd1_ih1oh1kh1_iw1ow1kw1");
    CHECK(b.ih == 5);
    CHECK(b.kh == 3);
    CHECK(b.pt == 1);
    CHECK(b.pb == 1);
    CHECK(b.iw == 1);
    // Width 1: depth and height.
    const conv_shape c = parse_ok("ic4oc8_id6kd2sd2_ih5kh3ph1_iw1kw1");
    CHECK(c.ih == 6);
    CHECK(c.sh == 2);
    CHECK(c.oh == 3);
    CHECK(c.iw == 5);
    CHECK(c.kw == 3);
    CHECK(c.ow == 5);
}

TEST_CASE("conv descriptor: clear errors") {
    CHECK(parse_error("ic16oc16_id5od5kd3pd1").find("3-D") != std::string::npos);
    CHECK(parse_error("ic16oc16_id5kd3_ih5kh3").find("h or w missing") != std::string::npos);
    CHECK(parse_error("ic16oc16").find("no spatial") != std::string::npos);
    CHECK(parse_error("ic16oc16ih5").find("kh") != std::string::npos);
    CHECK(parse_error("ih5kh3oc16").find("ic and oc") != std::string::npos);
    CHECK(parse_error("ic16oc16ih5kh3xx4").find("unknown field") != std::string::npos);
    CHECK(parse_error("ic16oc16ih5kh3ih6").find("twice") != std::string::npos);
    CHECK(parse_error("ic16oc16ih2kh5").find("empty") != std::string::npos);
    CHECK(parse_error("ic16oc16ih5kh3sh0").find("positive") != std::string::npos);
    CHECK(parse_error("   ").find("empty") != std::string::npos);
}
