"""The hand-written text of the demo eval set (see make_demo_eval.py). Difficulty: e / m / h.

Everything here was written for edgepick; answers were checked by hand. Hard label items use
sarcasm, negation or indirect wording; hard yes/no items need one step of reasoning.
"""

SENTIMENT_EN = [
    ("e", "I love this phone, the screen is bright and the battery lasts all day.", "positive"),
    ("e", "The package arrived broken and the seller ignored my messages.", "negative"),
    ("e", "The meeting is scheduled for 3 pm on Thursday.", "neutral"),
    ("e", "Absolutely fantastic service, the staff were friendly and fast.", "positive"),
    ("m", "The store opens at nine and closes at six on weekdays.", "neutral"),
    ("m", "After the update the app crashes every time I open the camera.", "negative"),
    ("m", "It took a while to set up, but now it works perfectly and I use it every day.", "positive"),
    ("m", "The manual has twelve pages and comes in three languages.", "neutral"),
    ("h", "Great, another delay. Third time this week my order has been pushed back.", "negative"),
    ("h", "I expected to hate it, but honestly it is the best purchase I made this year.", "positive"),
    ("h", "I would not call it terrible; in fact I would happily buy it again.", "positive"),
    ("h", "The price is listed as 299 yuan, including delivery.", "neutral"),
]

SENTIMENT_ZH = [
    ("e", "这家餐厅的菜很好吃，服务员也很热情。", "正面"),
    ("e", "快递晚了一周，包装还破了，太失望了。", "负面"),
    ("e", "会议改到周四下午三点，在二楼会议室。", "中性"),
    ("e", "新买的耳机音质非常好，我特别满意。", "正面"),
    ("m", "系统升级以后，手机经常自动关机。", "负面"),
    ("m", "虽然排队有点久，但是咖啡真的很值得。", "正面"),
    ("m", "这本书一共有三百页，分为十个章节。", "中性"),
    ("m", "客服回复很慢，问题到现在也没解决。", "负面"),
    ("h", "真是太棒了，刚买三天就坏了。", "负面"),
    ("h", "本来没抱什么希望，结果效果出乎意料地好。", "正面"),
    ("h", "说不上失望，反而比我想象的好用很多。", "正面"),
    ("h", "商品价格为一百二十元，支持七天无理由退货。", "中性"),
]

INTENT_EN = [
    ("e", "Where is my package right now?", "query"),
    ("e", "I want to buy two bags of coffee beans.", "order"),
    ("e", "Please cancel my order from yesterday.", "cancel"),
    ("e", "Thanks, have a nice day!", "other"),
    ("m", "Can you tell me whether the blue jacket comes in size M?", "query"),
    ("m", "Add three notebooks to my cart and check out.", "order"),
    ("m", "I changed my mind, I don't want the headphones anymore, stop the order.", "cancel"),
    ("m", "Your app has a really nice color scheme.", "other"),
    ("h", "Before I place anything, how long does delivery to Shanghai take?", "query"),
    ("h", "Same as last time: one large pizza, delivered to my office.", "order"),
    ("h", "Don't send the order I placed this morning, I will not need it.", "cancel"),
    ("h", "I'm not buying anything today, just wanted to say the courier was polite.", "other"),
]

INTENT_ZH = [
    ("e", "我的快递现在到哪里了？", "查询"),
    ("e", "我要买两箱牛奶。", "下单"),
    ("e", "请帮我取消昨天的订单。", "取消"),
    ("e", "谢谢你，再见！", "其他"),
    ("m", "这件外套有没有黑色的M码？", "查询"),
    ("m", "帮我下单三本笔记本，送到公司。", "下单"),
    ("m", "那副耳机我不想要了，订单别发了。", "取消"),
    ("m", "你们的界面设计得挺好看的。", "其他"),
    ("h", "下单之前想问一下，寄到上海要几天？", "查询"),
    ("h", "跟上次一样，再来一份大号披萨送到办公室。", "下单"),
    ("h", "早上买的那单先不要发货了，我用不上了。", "取消"),
    ("h", "今天不买东西，就是想说快递员很有礼貌。", "其他"),
]

YESNO_EN = [
    ("e", "Is the sun a star?", "yes"),
    ("e", "Is ice colder than boiling water?", "yes"),
    ("e", "Do fish live in water?", "yes"),
    ("e", "Is 2 greater than 10?", "no"),
    ("e", "Can a cat fly without help?", "no"),
    ("e", "Is Paris in France?", "yes"),
    ("m", "Is 15 an even number?", "no"),
    ("m", "Does a week have seven days?", "yes"),
    ("m", "Is a whale a fish?", "no"),
    ("m", "Is 100 greater than 99?", "yes"),
    ("m", "Is water made of hydrogen and oxygen?", "yes"),
    ("m", "Is the Pacific the smallest ocean?", "no"),
    ("h", "All birds in the park are pigeons. Tom saw a bird in the park. Did Tom see a pigeon?", "yes"),
    ("h", "Anna is taller than Ben, and Ben is taller than Carl. Is Carl taller than Anna?", "no"),
    ("h", "If today is Monday, is tomorrow Wednesday?", "no"),
    ("h", "A box holds 3 red balls and 2 blue balls. Are there more red balls than blue balls?", "yes"),
    ("h", "Lisa has 5 apples and gives all 5 away. Does she still have apples?", "no"),
    ("h", "Every student in the class passed the test. Mei is a student in the class. "
          "Did Mei pass the test?", "yes"),
]

YESNO_ZH = [
    ("e", "太阳是一颗恒星吗？", "是"),
    ("e", "一年有十二个月吗？", "是"),
    ("e", "鱼生活在水里吗？", "是"),
    ("e", "3比8大吗？", "否"),
    ("e", "北京是中国的首都吗？", "是"),
    ("e", "猫会下蛋吗？", "否"),
    ("m", "9是偶数吗？", "否"),
    ("m", "一个星期有七天吗？", "是"),
    ("m", "鲸鱼是鱼类吗？", "否"),
    ("m", "在标准大气压下，水在一百摄氏度沸腾吗？", "是"),
    ("m", "企鹅生活在北极吗？", "否"),
    ("m", "1000比999大吗？", "是"),
    ("h", "小明比小红高，小红比小刚高。小刚比小明高吗？", "否"),
    ("h", "如果今天是星期五，明天是星期六吗？", "是"),
    ("h", "盒子里有4个苹果，全部拿走以后，盒子里还有苹果吗？", "否"),
    ("h", "所有的玫瑰都是花，这朵是玫瑰。这朵是花吗？", "是"),
    ("h", "存在一个大于0并且小于2的偶数整数吗？", "否"),
    ("h", "小李每天都跑步，今天也是普通的一天。小李今天跑步了吗？", "是"),
]

QA_EN = [
    ("e", "What is the capital of France?", "Paris"),
    ("e", "How many days are in a week?", ["7", "seven"]),
    ("e", "What color is the sky on a clear day?", "blue"),
    ("e", "What is the largest planet in the solar system?", "Jupiter"),
    ("e", "What do bees make?", "honey"),
    ("e", "How many legs does a spider have?", ["8", "eight"]),
    ("m", "What is the chemical symbol for gold?", "Au"),
    ("m", "What gas do plants take in from the air to make food?", ["carbon dioxide", "CO2"]),
    ("m", "Who wrote the play Romeo and Juliet?", ["William Shakespeare", "Shakespeare"]),
    ("m", "At sea level, at how many degrees Celsius does water boil?", ["100", "100 degrees"]),
    ("m", "Which ocean lies between Europe and North America?", ["Atlantic", "Atlantic Ocean"]),
    ("m", "What is the capital of Japan?", "Tokyo"),
    ("h", "What is the smallest prime number?", ["2", "two"]),
    ("h", "How many continents are there on Earth?", ["7", "seven"]),
    ("h", "At how many degrees Fahrenheit does water freeze?", ["32", "32 degrees"]),
    ("h", "Which planet is closest to the Sun?", "Mercury"),
    ("h", "What is the longest river in China?", ["Yangtze", "Yangtze River", "Chang Jiang"]),
    ("h", "In which country are the pyramids of Giza?", "Egypt"),
]

QA_ZH = [
    ("e", "中国的首都是哪座城市？", "北京"),
    ("e", "一天有多少个小时？", ["24", "二十四", "24小时", "二十四小时"]),
    ("e", "晴天的天空是什么颜色？", ["蓝色", "蓝"]),
    ("e", "太阳系中最大的行星是哪一颗？", "木星"),
    ("e", "蜜蜂酿造什么？", "蜂蜜"),
    ("e", "一年有几个季节？", ["4", "四", "四个"]),
    ("m", "水的化学式是什么？", "H2O"),
    ("m", "《静夜思》的作者是谁？", "李白"),
    ("m", "长城位于哪个国家？", "中国"),
    ("m", "地球上面积最大的大洋是哪个？", "太平洋"),
    ("m", "日本的首都是哪座城市？", "东京"),
    ("m", "植物进行光合作用时吸收什么气体？", ["二氧化碳", "CO2"]),
    ("h", "最小的质数是几？", ["2", "二"]),
    ("h", "中国最长的河流是哪条？", "长江"),
    ("h", "一千克等于多少克？", ["1000", "一千"]),
    ("h", "离太阳最近的行星是哪颗？", "水星"),
    ("h", "世界上最高的山峰是哪座？", ["珠穆朗玛峰", "珠峰"]),
    ("h", "《红楼梦》的作者是谁？", "曹雪芹"),
]

# (difficulty, kind, field values in the kind's key order, text that states them)
EXTRACT_EN = [
    ("e", "person", ("Alice Brown", "Berlin", 34), "Alice Brown is 34 years old and lives in Berlin."),
    ("e", "person", ("David Chen", "Toronto", 28), "David Chen, 28, moved to Toronto last spring."),
    ("e", "person", ("Maria Lopez", "Madrid", 45), "Maria Lopez lives in Madrid and turned 45 this year."),
    ("e", "person", ("Omar Haddad", "Cairo", 52), "Our neighbour Omar Haddad is 52 and lives in Cairo."),
    ("e", "person", ("Sofia Rossi", "Milan", 23), "Sofia Rossi (age 23) works at a bakery in Milan."),
    ("e", "person", ("Liam Walsh", "Dublin", 39), "Liam Walsh, a 39-year-old teacher, lives in Dublin."),
    ("m", "order", ("Nora Kim", "A-1024", 3), "Nora Kim ordered 3 units of product A-1024."),
    ("m", "order", ("Paul Meyer", "B-7731", 12), "Order received from Paul Meyer: product B-7731, quantity 12."),
    ("m", "order", ("Hana Sato", "C-0458", 1), "Hana Sato wants 1 item with code C-0458 shipped tomorrow."),
    ("m", "order", ("Ivan Petrov", "D-3390", 25), "Please prepare 25 pieces of D-3390 for Ivan Petrov."),
    ("m", "order", ("Grace Obi", "E-5512", 7), "Customer Grace Obi asked for 7 of product E-5512 after calling twice."),
    ("m", "order", ("Tom Berg", "F-8806", 40), "Tom Berg placed an order on March 3 for 40 units of F-8806."),
    ("h", "invoice", ("Blue River Ltd", 1280.5, "555-0142"),
     "Invoice from Blue River Ltd: 3 boxes delivered, total 1280.5 yuan. Questions: call 555-0142."),
    ("h", "invoice", ("Green Leaf Foods", 349, "555-0199"),
     "Green Leaf Foods billed us 349 yuan for 12 bags of rice; their phone is 555-0199."),
    ("h", "invoice", ("North Star Tools", 2075.25, "555-0107"),
     "Payment due to North Star Tools: 2075.25 yuan within 30 days. Contact: 555-0107."),
    ("h", "invoice", ("Sunny Print Co", 86, "555-0163"),
     "Sunny Print Co charged 86 yuan for 200 flyers (tel. 555-0163)."),
]

EXTRACT_ZH = [
    ("e", "person", ("张伟", "北京", 30), "张伟今年30岁，住在北京。"),
    ("e", "person", ("李娜", "上海", 27), "李娜27岁，去年搬到了上海。"),
    ("e", "person", ("王芳", "广州", 41), "王芳住在广州，今年41岁。"),
    ("e", "person", ("刘洋", "成都", 35), "我们的新同事刘洋35岁，住在成都。"),
    ("e", "person", ("陈静", "杭州", 22), "陈静（22岁）在杭州的一家书店工作。"),
    ("e", "person", ("杨磊", "武汉", 48), "杨磊是一名48岁的老师，住在武汉。"),
    ("m", "order", ("赵敏", "A-2048", 5), "赵敏订购了5件商品A-2048。"),
    ("m", "order", ("孙浩", "B-1177", 10), "收到孙浩的订单：商品B-1177，数量10。"),
    ("m", "order", ("周婷", "C-3305", 2), "周婷要2件编号为C-3305的商品，明天发货。"),
    ("m", "order", ("吴军", "D-6621", 30), "请为吴军准备30件D-6621。"),
    ("m", "order", ("郑丽", "E-9043", 8), "客户郑丽打了两次电话，要8件商品E-9043。"),
    ("m", "order", ("黄勇", "F-4410", 15), "黄勇在3月5日下单了15件F-4410。"),
    ("h", "invoice", ("蓝河有限公司", 1560.5, "010-62345678"),
     "蓝河有限公司开来发票：共3箱货，总金额1560.5元，联系电话010-62345678。"),
    ("h", "invoice", ("绿叶食品", 420, "021-55501234"),
     "绿叶食品收取我们420元，共12袋大米，电话是021-55501234。"),
    ("h", "invoice", ("北星工具", 2380.75, "020-87654321"),
     "应付北星工具2380.75元，30天内付清。联系方式：020-87654321。"),
    ("h", "invoice", ("阳光印刷", 96, "028-66667777"),
     "阳光印刷印了200张传单，收费96元（电话028-66667777）。"),
]

SUMMARY_EN = [
    ("e", "The city library will close for renovation from June 1 to August 31. During this time, "
          "books can be returned at the community center on Oak Street. The library expects to "
          "reopen with a larger children's section.",
     "The library closes for renovation from June to August and will reopen with a larger children's section."),
    ("e", "Our team tested three laptops for battery life. The lightest model lasted nine hours, "
          "while the two heavier ones lasted only six. We recommend the lightest model for travel.",
     "The lightest laptop had the longest battery life and is recommended for travel."),
    ("e", "Heavy rain is expected across the region on Saturday. Officials advise drivers to avoid "
          "low roads near the river. The weather should clear by Sunday afternoon.",
     "Heavy rain is expected on Saturday, so drivers should avoid river roads until it clears on Sunday."),
    ("m", "A local bakery started giving unsold bread to a nearby shelter every evening. The owner "
          "says this prevents waste and helps families in need. Other shops in the street plan to join.",
     "A bakery gives its unsold bread to a shelter each evening, and other shops plan to join."),
    ("m", "The company released a software update that fixes a login bug. Users who could not sign "
          "in since Monday should install the update. The update also makes the app start faster.",
     "A software update fixes the login bug and makes the app start faster."),
    ("m", "Researchers planted trees along a busy road and measured the air for a year. Dust levels "
          "near the trees fell by about a quarter. They now suggest planting trees along other main roads.",
     "Trees planted along a busy road cut dust by about a quarter, so researchers suggest planting more."),
    ("m", "The school will start classes thirty minutes later from next month. Parents asked for the "
          "change because many children were tired in the morning. Buses will follow the new timetable.",
     "From next month school starts thirty minutes later because children were tired in the morning."),
    ("h", "A new train line connects the airport to the city center. The trip takes eighteen minutes, "
          "half the time of a taxi in traffic. Trains run every ten minutes from early morning to midnight.",
     "A new train line links the airport and the city center in eighteen minutes, with trains every ten minutes."),
    ("h", "The museum has added a free evening on the first Friday of every month. Visitors can see "
          "all exhibitions and join short guided tours. The museum hopes to attract people who work "
          "during the day.",
     "The museum now opens free on the first Friday evening of each month to attract people who work by day."),
    ("h", "A phone maker says its new phone charges to eighty percent in twenty minutes. Reviewers "
          "confirmed the fast charging but noted that the phone gets warm. The phone goes on sale next week.",
     "The new phone charges to eighty percent in twenty minutes but gets warm, and goes on sale next week."),
]

SUMMARY_ZH = [
    ("e", "市图书馆将从六月一日起闭馆装修，到八月底结束。闭馆期间，读者可以到社区中心还书。重新开放后，"
          "图书馆会增加儿童阅读区。", "市图书馆六月到八月闭馆装修，重新开放后将增加儿童阅读区。"),
    ("e", "气象台预报周六全市有大雨。有关部门提醒司机避开河边的低洼道路。预计周日下午天气转晴。",
     "周六有大雨，司机应避开河边低洼道路，周日下午转晴。"),
    ("e", "小区将在本周六上午停水检修，时间从八点到十二点。居民需要提前储水。如有问题可以联系物业。",
     "小区周六上午八点到十二点停水检修，居民需提前储水。"),
    ("m", "一家面包店每天晚上把没卖完的面包送给附近的救助站。店主说这样既减少浪费又能帮助有需要的家庭。"
          "街上的其他商店也打算加入。", "面包店每晚把剩余面包送给救助站，其他商店也打算加入。"),
    ("m", "公司发布了一个软件更新，修复了登录失败的问题。从周一起无法登录的用户应尽快安装。"
          "更新后应用的启动速度也更快了。", "软件更新修复了登录问题，并让应用启动更快。"),
    ("m", "研究人员在一条繁忙的道路两旁种树，并连续一年监测空气。结果显示，树旁的灰尘减少了大约四分之一。"
          "他们建议在其他主干道也种树。", "道路两旁种树使灰尘减少约四分之一，研究人员建议推广。"),
    ("m", "学校从下个月起推迟三十分钟上课。家长们提出这个建议，因为很多孩子早上很疲惫。"
          "校车也会按新的时间表运行。", "因为孩子早上疲惫，学校下个月起推迟三十分钟上课。"),
    ("h", "一条新的地铁线连接机场和市中心，全程只需十八分钟，比堵车时打车快一半。列车从早到午夜每十分钟一班。",
     "新地铁线连接机场和市中心，全程十八分钟，每十分钟一班。"),
    ("h", "博物馆在每月第一个星期五晚上免费开放。观众可以参观所有展览，并参加简短的讲解。"
          "博物馆希望吸引白天上班的人。", "博物馆每月第一个周五晚上免费开放，以吸引上班族。"),
    ("h", "某手机厂商称新手机二十分钟可以充电到百分之八十。评测证实了快充的效果，但发现手机会发热。"
          "新手机将于下周上市。", "新手机二十分钟可充到百分之八十但会发热，下周上市。"),
]
